package client

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// bytesOf reads as n bytes of b.
type bytesOf struct {
	n int64
	b byte
}

func (r *bytesOf) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = r.b
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// A line far over the limit is read through without being held, nor sent, and the lines after
// it keep their numbers.
func TestOversizedLineIsNotHeld(t *testing.T) {
	const huge = 64 << 20
	in := io.MultiReader(strings.NewReader(`{"slug":"first"}`+"\n"+`{"slug":"big","name":"`), &bytesOf{huge, 'x'}, strings.NewReader("\"}\n"+`{"slug":"after"}`))
	var batches []*batch
	var read atomic.Int64
	bt := &batcher{size: 10, seen: map[string]location{}, read: &read, cur: &batch{},
		where: func(l location) string { return fmt.Sprint(l.line) },
		emit:  func(b *batch) bool { batches = append(batches, b); return true }}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := readNDJSON(bt, 0, in, "big.ndjson"); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	bt.flush()
	// Held whole, the line would take 64 MiB; kept to the limit, it takes the growth of a 4 MiB
	// buffer.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > huge/2 {
		t.Errorf("reading a %d MiB line allocated %d MiB, want it bounded by the 4 MiB limit", huge>>20, alloc>>20)
	}
	if len(batches) != 1 {
		t.Fatalf("got %d batches, want 1", len(batches))
	}
	b := batches[0]
	if len(b.items) != 3 || b.items[1].at.line != 2 || !strings.Contains(b.items[1].local, "larger than 4 MiB") || b.items[2].at.line != 3 {
		t.Errorf("items: got %+v, want line 2 refused and line 3 after it", b.items)
	}
	if want := `{"slug":"first"}` + "\n" + `{"slug":"after"}` + "\n"; string(b.body) != want {
		t.Errorf("body: got %.100q, want %q", b.body, want)
	}
	if total := int64(len(`{"slug":"first"}`+"\n"+`{"slug":"big","name":"`+"\"}\n"+`{"slug":"after"}`)) + huge; b.bytes != total {
		t.Errorf("input bytes: got %d, want %d", b.bytes, total)
	}
}
