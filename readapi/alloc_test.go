//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation counts only mean
// something without it.

package readapi

import (
	"net/http"
	"testing"
)

// TestHotPathsDoNotAllocate runs the hot paths with every quota on: the specification's, on a
// clock that moves an hour at every request so that the client finds its full quota back each
// time, and quotas too large to spend on the real clock.
func TestHotPathsDoNotAllocate(t *testing.T) {
	configs := []struct {
		name    string
		cfg     Config
		shared  bool // the quotas shared with two other read nodes
		tallied bool // each key's use tallied, as while it is reported
	}{
		{"SpecQuotas", Config{Now: steppingClock(defaultWindow)}, false, false},
		{"HugeQuotas", benchConfig(), false, false},
		{"SharedQuotas", benchConfig(), true, false},
		{"Metrics", withMetrics(t, benchConfig()), false, false},
		{"Tallied", benchConfig(), false, true},
		{"SharedTallied", benchConfig(), true, true},
	}
	for _, c := range configs {
		s := newTestServer(t, fixtureSource(t), c.cfg)
		if c.tallied {
			tallied(s)
		}
		if c.shared {
			m := &membership{n: 3, every: int64(DefaultQuotaPeriod), offset: s.epoch.UnixNano()}
			// The two others report on time throughout.
			ahead := m.period(s.elapsed()) + 1<<20
			m.reported = []int64{ahead, ahead}
			for _, p := range []*policy{s.ipQuota, s.keyQuota, s.redirectQuota} {
				p.lim.nodes.Store(m)
			}
		}
		h := s.Handler()
		for _, p := range hotPaths {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
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
}

// TestRefusalDoesNotAllocate checks that a 429, the answer a flood gets, allocates nothing either:
// of the per-address quota, or of the key's with its use tallied.
func TestRefusalDoesNotAllocate(t *testing.T) {
	for name, cfg := range map[string]Config{
		"IP":  {IPQuota: 1, Now: newFakeClock().Now},
		"Key": {KeyQuota: 1, IPQuota: -1, Now: newFakeClock().Now},
	} {
		t.Run(name, func(t *testing.T) {
			h := tallied(newTestServer(t, fixtureSource(t), withMetrics(t, cfg))).Handler()
			p := hotPaths[0]
			r := newHotRequest(p.target, p.header)
			w := newDiscardWriter()
			h.ServeHTTP(w, r) // spends the quota
			if w.status != p.status {
				t.Fatalf("first request: got %d, want %d", w.status, p.status)
			}
			allocs := testing.AllocsPerRun(200, func() {
				w.reset()
				h.ServeHTTP(w, r)
			})
			if w.status != http.StatusTooManyRequests {
				t.Fatalf("status: got %d, want 429", w.status)
			}
			if allocs != 0 {
				t.Errorf("allocations per refused request: got %v, want 0", allocs)
			}
		})
	}
}
