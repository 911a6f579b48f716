package webhook

import (
	"context"
	"sync"
)

// turns lets one attempt at a time go to each endpoint from this process: an attempt taken
// while an older delivery to the same endpoint is still being sent waits for it, so that a
// receiver never gets an older revision after a newer one from one dispatcher. It holds only the
// endpoints with an attempt in flight, at most the dispatcher's concurrency.
type turns struct {
	mu   sync.Mutex
	busy map[string]chan struct{} // endpoint key → closed when its attempt ends
}

// take waits for key's turn and returns the function that ends it; it reports false, with
// nothing to end, when ctx ends first.
func (t *turns) take(ctx context.Context, key string) (release func(), ok bool) {
	for {
		t.mu.Lock()
		wait, busy := t.busy[key]
		if !busy {
			if t.busy == nil {
				t.busy = map[string]chan struct{}{}
			}
			done := make(chan struct{})
			t.busy[key] = done
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				delete(t.busy, key)
				t.mu.Unlock()
				close(done)
			}, true
		}
		t.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, false
		}
	}
}
