package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// eventually calls f until it returns nil or the deadline passes, and returns its last error.
func eventually(ctx context.Context, deadline time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		err := f(attempt)
		cancelAttempt()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// streamLeader returns the server leading the CONTENT stream.
func streamLeader(tb testing.TB, js jetstream.JetStream, servers []*server.Server) *server.Server {
	tb.Helper()
	stream, err := js.Stream(tb.Context(), events.StreamName)
	if err != nil {
		tb.Fatalf("stream: %v", err)
	}
	info, err := stream.Info(tb.Context())
	if err != nil {
		tb.Fatalf("stream info: %v", err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil {
		tb.Fatalf("stream: got %d replicas, cluster %+v, want 3 replicas in a cluster", info.Config.Replicas, info.Cluster)
	}
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			return s
		}
	}
	tb.Fatalf("stream leader %q is not one of the servers", info.Cluster.Leader)
	return nil
}

func TestReplicatedStream(t *testing.T) {
	t.Parallel()
	servers := natstest.StartCluster(t)
	ctx := t.Context()
	nc := natstest.Connect(t, servers[0])
	cfg := events.Config{Replicas: 3}

	// The cluster may still be placing its peers: retry opening for a while.
	var st *events.Store
	if err := eventually(ctx, 20*time.Second, func(ctx context.Context) (err error) {
		st, err = events.Open(ctx, nc, cfg)
		return err
	}); err != nil {
		t.Fatalf("Open with 3 replicas: %v", err)
	}

	first := mustAppend(t, st, "alpha", 0, "a-1", event("t", `{}`))
	second := mustAppend(t, st, "alpha", first, "a-2", event("t", `{}`))
	if _, err := st.Append(ctx, "alpha", first, "a-3", []events.Envelope{event("t", `{}`)}); !errors.Is(err, events.ErrConflict) {
		t.Errorf("Append with a stale expectation: got %v, want %v", err, events.ErrConflict)
	}
	for _, expected := range []uint64{0, second} {
		seq, err := st.Append(ctx, "alpha", expected, "a-1", []events.Envelope{event("t", `{}`)})
		if !errors.Is(err, events.ErrDuplicate) || seq != first {
			t.Errorf("replay of a-1 expecting %d: got %d, %v, want %d, %v", expected, seq, err, first, events.ErrDuplicate)
		}
	}

	// Writers racing on a replicated subject also see plain conflicts.
	const writers, perWriter = 4, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := range perWriter {
				id := fmt.Sprintf("w%d-n%d", w, n)
				if err := increment(ctx, st, "counter", id, fmt.Sprintf(`{"writer":%d,"n":%d}`, w, n)); err != nil {
					t.Errorf("increment %s: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkIncrements(t, st, "counter", writers, perWriter)

	// Stop the stream leader gracefully, talking to a server that stays.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	leader := streamLeader(t, js, servers)
	var survivor *server.Server
	for _, s := range servers {
		if s != leader {
			survivor = s
			break
		}
	}
	nc2 := natstest.Connect(t, survivor)
	st2 := openStore(t, nc2, cfg)
	leader.Shutdown()
	leader.WaitForShutdown()

	// Appends continue once a new leader is elected. An append whose acknowledgement was lost
	// is reported as a duplicate when retried, and counts as done.
	last := second
	for i := range 5 {
		id := fmt.Sprintf("after-%d", i)
		err := eventually(ctx, 20*time.Second, func(ctx context.Context) error {
			seq, err := st2.Append(ctx, "alpha", last, id, []events.Envelope{event("t", `{}`)})
			if err == nil || errors.Is(err, events.ErrDuplicate) {
				last = seq
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatalf("Append %s after the leader stopped: %v", id, err)
		}
	}

	// History reads with direct gets, which any replica answers: one that has not applied the
	// last append yet answers without it, until it has.
	var history []events.Record
	if err := eventually(ctx, 20*time.Second, func(ctx context.Context) (err error) {
		if history, err = st2.History(ctx, "alpha"); err == nil && len(history) != 7 {
			err = fmt.Errorf("alpha records: got %d, want 7", len(history))
		}
		return err
	}); err != nil {
		t.Fatalf("History after the leader stopped: %v", err)
	}
	if got := history[len(history)-1].Sequence; got != last {
		t.Errorf("last alpha record: got sequence %d, want %d", got, last)
	}
}
