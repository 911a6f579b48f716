package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// The bar of verify shows the establishments checked, their total, the rate and the end.
func TestVerifyProgressBar(t *testing.T) {
	var out lockedBuffer
	show, stop := Establishments(&out, Options{Mode: "bar", Every: time.Second}, time.Now(), "verified")
	show(1, 3)
	show(3, 3)
	show(2, 3) // reported late by another worker: the bar does not go back
	stop(true)
	for _, want := range []string{"3 of 3 establishments", "100 %", "/s", "done"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bar output does not hold %q:\n%q", want, out.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the bar's goroutine and the test's.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
