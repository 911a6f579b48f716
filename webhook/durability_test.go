package webhook_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
)

// TestPendingWindowSurvivesDispatcherAndServerRestart kills the dispatcher while a window is
// open, restarts the NATS server from its store, and checks that a new dispatcher delivers the
// window on time, once.
func TestPendingWindowSurvivesDispatcherAndServerRestart(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		srv := startNATS(t, dir)
		nc := connect(t, srv)
		first := openDispatcher(t, nc, testConfig(t, rcv))
		register(t, first, "chez-marcel", "wh_a", rcv.url("/"), secretA)
		sigs := openSignals(t, nc)
		stop := run(t, first)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, 5*time.Second)
		publish(t, sigs, "chez-marcel", 2, "menus")
		sleepUntil(start, 10*time.Second)
		stop()
		first.Close()
		nc.Close()
		stopNATS(srv)

		sleepUntil(start, 20*time.Second) // down for 10 s
		srv = startNATS(t, dir)
		nc = connect(t, srv)
		second := openDispatcher(t, nc, testConfig(t, rcv))
		run(t, second)

		sleepUntil(start, 10*time.Minute)
		reqs := rcv.requests()
		if len(reqs) != 1 {
			t.Fatalf("got %d deliveries, want 1", len(reqs))
		}
		p := payloadOf(t, reqs[0])
		if p.Data.Revision != 2 || len(p.Data.Resources) != 2 {
			t.Errorf("got %+v, want revision 2 with hours and menus", p.Data)
		}
		if at := sentAt(t, reqs[0]); at.Sub(start) != 30*time.Second {
			t.Errorf("delivered at +%s, want +30s", at.Sub(start))
		}
	})
}

// TestPendingRetrySurvivesRestart stops everything while a failed delivery waits for its retry:
// the retry happens after the restart, on schedule, and counts the attempt made before.
func TestPendingRetrySurvivesRestart(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.Backoff = []time.Duration{time.Minute}
		cfg.Jitter = -1
		srv := startNATS(t, dir)
		nc := connect(t, srv)
		first := openDispatcher(t, nc, cfg)
		register(t, first, "chez-marcel", "wh_a", rcv.url("/"), secretA)
		sigs := openSignals(t, nc)
		stop := run(t, first)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, 40*time.Second) // first attempt failed at +30s; retry due at +90s
		stop()
		first.Close()
		nc.Close()
		stopNATS(srv)

		srv = startNATS(t, dir)
		nc = connect(t, srv)
		second := openDispatcher(t, nc, cfg)
		run(t, second)
		sleepUntil(start, time.Hour)

		reqs := rcv.requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d requests, want 2", len(reqs))
		}
		if reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
			t.Errorf("the retry has another delivery id")
		}
		log, err := second.DeliveryLog(t.Context(), "wh_a", 0)
		if err != nil || len(log) != 1 {
			t.Fatalf("DeliveryLog: %d records, %v; want 1", len(log), err)
		}
		rec := log[0]
		if rec.Status != webhook.StatusDelivered || len(rec.Attempts) != 2 || rec.Attempts[1].Number != 2 {
			t.Fatalf("got %s with attempts %+v, want delivered at attempt 2", rec.Status, rec.Attempts)
		}
		// The retry is due a minute after the first attempt; the server may redeliver a pending
		// message early after a restart, but never before the restart.
		if gap := rec.Attempts[1].Time.Sub(rec.Attempts[0].Time); gap < 10*time.Second || gap > time.Minute {
			t.Errorf("retry %s after the first attempt, want after the restart and at most a minute", gap)
		}
	})
}

// TestTwoDispatchersDeliverOnce runs two dispatchers on the same streams: every window is
// delivered once, by one of them.
func TestTwoDispatchersDeliverOnce(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n%7 == 0 {
			w.WriteHeader(http.StatusInternalServerError) // some retries, shared too
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	const establishments = 40
	inBubble(t, func(t *testing.T) {
		srv := startNATS(t, dir)
		cfg := testConfig(t, rcv)
		a := openDispatcher(t, connect(t, srv), cfg)
		b := openDispatcher(t, connect(t, srv), cfg)
		nc := connect(t, srv)
		sigs := openSignals(t, nc)
		for i := range establishments {
			register(t, a, fmt.Sprintf("e%02d", i), "wh_"+fmt.Sprint(i), rcv.url(fmt.Sprintf("/%d", i)), secretA)
		}
		run(t, a)
		run(t, b)
		start := time.Now()
		for rev := int64(1); rev <= 3; rev++ {
			for i := range establishments {
				publish(t, sigs, fmt.Sprintf("e%02d", i), rev, "hours")
			}
			sleepUntil(start, time.Duration(rev)*5*time.Second)
		}
		sleepUntil(start, time.Hour)

		seen := map[string]int{}     // establishment → successful deliveries
		attempts := map[string]int{} // delivery id → requests
		for _, r := range rcv.requests() {
			p := payloadOf(t, r)
			attempts[p.ID]++
			if p.Data.Revision != 3 {
				t.Errorf("%s: got revision %d, want 3", p.Data.Establishment, p.Data.Revision)
			}
			seen[p.Data.Establishment]++
		}
		if len(attempts) != establishments {
			t.Errorf("got %d distinct deliveries, want %d", len(attempts), establishments)
		}
		for i := range establishments {
			slug := fmt.Sprintf("e%02d", i)
			log, err := a.DeliveryLog(t.Context(), "wh_"+fmt.Sprint(i), 0)
			if err != nil || len(log) != 1 {
				t.Fatalf("%s: DeliveryLog: %d records, %v; want 1", slug, len(log), err)
			}
			rec := log[0]
			if rec.Status != webhook.StatusDelivered {
				t.Errorf("%s: got status %s, want delivered", slug, rec.Status)
			}
			if got := attempts[rec.ID]; got != len(rec.Attempts) {
				t.Errorf("%s: receiver got %d requests for %s, the log has %d attempts", slug, got, rec.ID, len(rec.Attempts))
			}
			for j, at := range rec.Attempts {
				if at.Number != j+1 {
					t.Errorf("%s: attempt %d numbered %d: attempts overlapped", slug, j+1, at.Number)
				}
			}
		}
	})
}

// The dispatch streams answer direct gets on a single node alone: with replicas, which a direct
// get may find behind the leader, the dispatcher's reads go to the leader, also on streams an
// earlier version created with direct gets on.
func TestDispatchStreamsAnswerDirectGetsOnOneReplicaAlone(t *testing.T) {
	streams := []string{webhook.StreamName, webhook.QueueStreamName}
	direct := func(js jetstream.JetStream) map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, name := range streams {
			s, err := js.Stream(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = s.CachedInfo().Config.AllowDirect
		}
		return out
	}

	nc := connect(t, startNATS(t, t.TempDir()))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	openDispatcher(t, nc, webhook.Config{})
	for name, on := range direct(js) {
		if !on {
			t.Errorf("one replica: stream %s answers no direct gets", name)
		}
	}

	nc = natstest.Connect(t, natstest.StartCluster(t)[0])
	if js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	openDispatcher(t, nc, webhook.Config{Replicas: 3}).Close()
	for _, name := range streams {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = true
		if _, err := js.UpdateStream(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	openDispatcher(t, nc, webhook.Config{Replicas: 3})
	for name, on := range direct(js) {
		if on {
			t.Errorf("three replicas: stream %s answers direct gets", name)
		}
	}
}
