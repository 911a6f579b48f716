package readapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events/natstest"
)

// TestSharedQuotaHoldsAcrossReadNodes: one key hammered through 1, 2 and 3 read nodes in turn, as
// a round-robin balancer spreads it, gets its quota across all of them, not once per node: at
// most 5 % over what one node alone admits in the same time (the quota at once, then one request
// per emission interval), and at least the quota itself. A node that stops hearing from the
// others counts alone again.
func TestSharedQuotaHoldsAcrossReadNodes(t *testing.T) {
	srv := natstest.Start(t)
	const (
		quota  = 120
		window = 30 * time.Second // one request back every 250 ms
		during = 5 * time.Second
	)
	interval := window / quota
	bound := quota + int(during/interval) + 1
	for nodes := 1; nodes <= 3; nodes++ {
		servers := make([]*Server, nodes)
		stops := make([]func(), nodes)
		for i := range servers {
			servers[i] = newTestServer(t, fixtureSource(t), Config{KeyQuota: quota, IPQuota: -1, Window: window})
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := servers[i].ShareQuotas(ctx, nc, 50*time.Millisecond); err != nil {
					t.Error(err)
				}
			}()
			stops[i] = func() { cancel(); <-done; nc.Close() }
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, s := range servers {
			for m := s.keyQuota.lim.nodes.Load(); nodes > 1 && (m == nil || m.n != nodes); m = s.keyQuota.lim.nodes.Load() {
				if time.Now().After(deadline) {
					t.Fatalf("%d nodes: a node does not see the others", nodes)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}

		// Two clients of one key, each sending its requests to the nodes in turn.
		var allowed, sent atomic.Int64
		perNode := make([]atomic.Int64, nodes)
		end := time.Now().Add(during)
		var wg sync.WaitGroup
		for c := range 2 {
			wg.Go(func() {
				for i := c; time.Now().Before(end); i++ {
					n := i % nodes
					w := serve(t, servers[n].Handler(), http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice))
					sent.Add(1)
					if w.Code == http.StatusOK {
						allowed.Add(1)
						perNode[n].Add(1)
					}
					time.Sleep(100 * time.Microsecond)
				}
			})
		}
		wg.Wait()
		var spread []int64
		for i := range perNode {
			spread = append(spread, perNode[i].Load())
		}
		got := int(allowed.Load())
		t.Logf("%d read nodes: %d of %d requests allowed in %s (one node alone: at most %d; %+.1f%%), per node %v",
			nodes, got, sent.Load(), during, bound, 100*float64(got-bound)/float64(bound), spread)
		if got > bound*105/100 {
			t.Errorf("%d nodes: %d allowed, more than 5%% over %d", nodes, got, bound)
		}
		if got < quota {
			t.Errorf("%d nodes: %d allowed, fewer than the quota %d", nodes, got, quota)
		}
		if nodes == 3 {
			// A node gone quiet is forgotten by the others within ten periods.
			stops[0]()
			stops = stops[1:]
			for m := servers[1].keyQuota.lim.nodes.Load(); m == nil || m.n != 2; m = servers[1].keyQuota.lim.nodes.Load() {
				if time.Now().After(end.Add(10 * time.Second)) {
					t.Fatalf("a node that stopped reporting is still counted: %+v", m)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		for _, stop := range stops {
			stop()
		}
		for _, s := range servers {
			if m := s.keyQuota.lim.nodes.Load(); m != nil {
				t.Errorf("%d nodes: a stopped node still shares its quotas with %d", nodes, m.n)
			}
		}
	}
}

// TestShareArithmetic: a report cannot wrap a client's count around, however large; a quota
// smaller than the number of nodes is served by each node in turn, not by the first ones only;
// and a node whose reports are several periods late costs a share for each.
func TestShareArithmetic(t *testing.T) {
	every := int64(100 * time.Millisecond)
	var k clientKey
	k[3] = 42

	l := newLimiter(120, int64(time.Hour), 1024)
	l.charge(k, 1<<40, 0)
	if d := l.peek(k, 0); d.remaining != 0 {
		t.Errorf("after a huge report: %d left, want 0", d.remaining)
	}

	for rank := range 3 {
		l := newLimiter(1, int64(time.Hour), 1024)
		l.nodes.Store(&membership{n: 3, rank: rank, every: every, reported: []int64{1 << 40, 1 << 40}})
		admitted := -1
		for p := range int64(3) {
			if l.take(k, p*every+1).allowed {
				admitted = int(p)
				break
			}
		}
		if admitted < 0 {
			t.Errorf("rank %d: a quota of 1 shared by 3 nodes never admitted in 3 periods", rank)
		}
	}

	// 3 nodes, room 120, period 10: on time (period 9 reported), a share is 40; with the reports
	// of periods 8 and 9 late, 120 - 2×40 leaves 40 to split, 13 here; of 7 to 9, nothing.
	for _, c := range []struct {
		reported int64
		want     int
	}{{9, 40}, {7, 13}, {6, 0}} {
		l := newLimiter(120, int64(time.Hour), 1024)
		l.nodes.Store(&membership{n: 3, every: every, reported: []int64{c.reported, 1 << 40}})
		now := 10*every + 1
		got := 0
		for l.take(k, now).allowed {
			got++
		}
		if got != c.want {
			t.Errorf("a node reported up to period %d: %d admitted in period 10, want %d", c.reported, got, c.want)
		}
	}

	// 2 nodes, quota 100: this one takes its 50 in period 9; the other's report of period 9 is
	// late in period 10, when it may have taken its 50: nothing more here.
	l = newLimiter(100, int64(time.Hour), 1024)
	l.nodes.Store(&membership{n: 2, every: every, reported: []int64{8}})
	got := 0
	for now := 9*every + 1; l.take(k, now).allowed; now++ {
		got++
	}
	for now := 10*every + 1; l.take(k, now).allowed; now++ {
		got++
	}
	if got != 50 {
		t.Errorf("two periods, the other node's report of the first late: %d admitted here, want 50", got)
	}
}
