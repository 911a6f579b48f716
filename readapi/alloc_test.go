//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation counts only mean
// something without it.

package readapi

import "testing"

func TestHotPathsDoNotAllocate(t *testing.T) {
	h := newServer(fixtureSource(t), discardLogger()).Handler()
	for _, p := range hotPaths {
		t.Run(p.name, func(t *testing.T) {
			r := newHotRequest(p.target, p.header)
			w := newDiscardWriter()
			h.ServeHTTP(w, r)
			if w.status != p.status {
				t.Fatalf("status: got %d, want %d", w.status, p.status)
			}
			allocs := testing.AllocsPerRun(200, func() {
				w.reset()
				h.ServeHTTP(w, r)
			})
			if allocs != 0 {
				t.Errorf("allocations per request: got %v, want 0", allocs)
			}
		})
	}
}
