package progress

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Plain lines come every interval, messages between them, and one more line at the end when the
// view asks for it.
func TestPlainLines(t *testing.T) {
	var out lockedBuffer
	var n atomic.Int64
	d := Start(&out, Options{Mode: "plain", Every: 5 * time.Millisecond}, time.Now(), View{
		Line:     func() string { return fmt.Sprintf("done %d", n.Load()) },
		LastLine: true,
	})
	fmt.Fprintln(d.Messages(), "a message")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "done 0\n"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no plain line after 10s: %q", out.String())
		}
	}
	n.Store(7)
	d.Stop(true)
	if got := out.String(); !strings.HasPrefix(got, "a message\n") || !strings.HasSuffix(got, "done 7\n") {
		t.Errorf("got %q, want the message, lines, and done 7 last", got)
	}
}

// Without a total, the bar is a spinner with the label and the rate.
func TestSpinner(t *testing.T) {
	var out lockedBuffer
	d := Start(&out, Options{Mode: "bar", Every: time.Second}, time.Now(), View{
		Label: func() string { return "12 documents" },
		Count: func() int64 { return 12 },
		Total: -1,
	})
	fmt.Fprintln(d.Messages(), "above the bar")
	d.SetCurrent(100)
	d.Stop(false)
	for _, want := range []string{"12 documents", "/s", "above the bar\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not hold %q:\n%q", want, out.String())
		}
	}
}

func TestCheck(t *testing.T) {
	for _, o := range []Options{{"loud", time.Second}, {"plain", 0}, {"bar", -time.Second}} {
		if o.Check() == nil {
			t.Errorf("%+v: got no error", o)
		}
	}
	for _, mode := range []string{"auto", "bar", "plain", "none"} {
		if err := (Options{mode, time.Second}).Check(); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}
