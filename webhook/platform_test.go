package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// platformOf decodes a platform delivery, checking its Standard Webhooks signature with that
// specification's own library (not its time, as deliveries are checked after the fact).
func platformOf(tb testing.TB, r received, secret string) webhook.PlatformPayload {
	tb.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		tb.Fatal(err)
	}
	if err := v.VerifyIgnoringTimestamp(r.Body, r.Header); err != nil {
		tb.Errorf("signature: %v", err)
	}
	var p webhook.PlatformPayload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
	if p.Type != webhook.EventEstablishmentsUpdated {
		tb.Errorf("type %q, want %q", p.Type, webhook.EventEstablishmentsUpdated)
	}
	return p
}

// runWithPlatform runs a dispatcher with cfg on a NATS server of its own, with the platform
// endpoint pf_all on rcv's /all, signed with secretA.
func runWithPlatform(t *testing.T, dir string, cfg webhook.Config, rcv *receiver) (*webhook.Dispatcher, *events.Signals, *nats.Conn) {
	t.Helper()
	nc := connect(t, startNATS(t, dir))
	d := openDispatcher(t, nc, cfg)
	sigs := openSignals(t, nc)
	registerPlatform(t, d, "pf_all", rcv.url("/all"), secretA)
	run(t, d)
	return d, sigs, nc
}

func registerPlatform(tb testing.TB, d *webhook.Dispatcher, id, url, secret string, establishments ...string) {
	tb.Helper()
	if _, err := d.Registry().CreatePlatform(tb.Context(), id, url, secret, establishments); err != nil {
		tb.Fatalf("CreatePlatform(%s): %v", id, err)
	}
}

func publishSignal(tb testing.TB, s *events.Signals, sig events.Signal) {
	tb.Helper()
	sig.Time = time.Now()
	if err := s.Publish(tb.Context(), sig); err != nil {
		tb.Fatalf("Publish(%+v): %v", sig, err)
	}
}

// changesOf gathers the changes of platform deliveries, in order, failing the test when an
// establishment's revision goes back.
func changesOf(tb testing.TB, reqs []received, secret string) (map[string]events.Change, [][]events.Change) {
	tb.Helper()
	state := map[string]events.Change{}
	var batches [][]events.Change
	for _, r := range reqs {
		p := platformOf(tb, r, secret)
		batches = append(batches, p.Data.Changes)
		for _, c := range p.Data.Changes {
			if had, ok := state[c.Establishment]; ok && c.Revision < had.Revision {
				tb.Errorf("%s went back from %d to %d", c.Establishment, had.Revision, c.Revision)
			}
			state[c.Establishment] = c
		}
	}
	return state, batches
}

// A platform endpoint receives the changes of every establishment in batches, merged per
// establishment within the window, the transitions included; one registered with a list
// receives only its establishments; an endpoint registered later receives what follows.
func TestPlatformEndpointsReceiveBatches(t *testing.T) {
	all, some := newReceiver(t, nil), newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		nc := connect(t, startNATS(t, dir))
		cfg := testConfig(t, all)
		cfg.RootCAs.AddCert(some.srv.Certificate())
		cfg.PlatformBatch = 2
		d := openDispatcher(t, nc, cfg)
		sigs := openSignals(t, nc)
		publish(t, sigs, "avant", 1, "hours") // before the registration: not delivered
		registerPlatform(t, d, "pf_all", all.url("/all"), secretA)
		run(t, d)
		start := time.Now()

		publish(t, sigs, "a", 3, "hours")
		publish(t, sigs, "b", 4, "menus")
		publish(t, sigs, "a", 5, "menus/carte")
		publishSignal(t, sigs, events.Signal{Establishment: "c", Revision: 6, Resources: []string{"establishment", "hours", "menus"}, Unserved: true, Transition: events.TransitionUnserved, Stored: 9})
		sleepUntil(start, 29*time.Second)
		if n := all.count(); n != 0 {
			t.Fatalf("%d deliveries before the window closed", n)
		}
		sleepUntil(start, 35*time.Second)
		state, batches := changesOf(t, all.requests(), secretA)
		if len(batches) != 2 || len(batches[0]) != 2 || len(batches[1]) != 1 {
			t.Fatalf("batches %v, want 2 then 1 establishments", batches)
		}
		want := map[string]events.Change{
			"a": {Establishment: "a", Revision: 5, Resources: []string{"hours", "menus/carte"}, Served: true},
			"b": {Establishment: "b", Revision: 4, Resources: []string{"menus"}, Served: true},
			"c": {Establishment: "c", Revision: 6, Resources: []string{"establishment", "hours", "menus"}, Served: false},
		}
		if diff := cmp.Diff(want, state); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}

		// A filtered endpoint, registered now, receives its establishments' next changes only.
		registerPlatform(t, d, "pf_some", some.url("/some"), secretB, "b", "z")
		start = time.Now()
		publish(t, sigs, "a", 7, "hours")
		publish(t, sigs, "b", 8, "hours")
		sleepUntil(start, 40*time.Second)
		got, _ := changesOf(t, some.requests(), secretB)
		if diff := cmp.Diff(map[string]events.Change{"b": {Establishment: "b", Revision: 8, Resources: []string{"hours"}, Served: true}}, got); diff != "" {
			t.Errorf("filtered endpoint (-want +got):\n%s", diff)
		}
		if state, _ = changesOf(t, all.requests(), secretA); state["a"].Revision != 7 || state["b"].Revision != 8 {
			t.Errorf("the endpoint of every establishment: %v", state)
		}
	})
}

// A failing receiver gets every change once it answers again, never an older revision after a
// newer one: a batch given up comes again, merged with what changed since; one answered 410
// disables the endpoint, and enabling it delivers what it missed.
func TestPlatformRevisionsNeverGoBack(t *testing.T) {
	var answer atomic.Int32
	answer.Store(http.StatusServiceUnavailable)
	var mu sync.Mutex
	accepted := map[int]bool{} // requests answered 2xx, by number
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		code := int(answer.Load())
		mu.Lock()
		accepted[n] = code/100 == 2
		mu.Unlock()
		w.WriteHeader(code)
	})
	delivered := func() []received {
		mu.Lock()
		defer mu.Unlock()
		var out []received
		for i, r := range rcv.requests() {
			if accepted[i+1] {
				out = append(out, r)
			}
		}
		return out
	}
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.MaxAttempts = 2
		d, sigs, _ := runWithPlatform(t, dir, cfg, rcv)
		start := time.Now()
		publish(t, sigs, "a", 1, "hours")
		publish(t, sigs, "b", 2, "hours")
		sleepUntil(start, 5*time.Minute) // two attempts, given up
		publish(t, sigs, "a", 3, "menus")
		sleepUntil(start, 6*time.Minute) // the next window's, given up too
		answer.Store(http.StatusNoContent)
		publish(t, sigs, "c", 4, "hours")
		sleepUntil(start, 7*time.Minute)
		ok := delivered()
		if len(ok) != 1 {
			t.Fatalf("%d deliveries accepted, want 1", len(ok))
		}
		want := []events.Change{
			{Establishment: "a", Revision: 3, Resources: []string{"hours", "menus"}, Served: true},
			{Establishment: "b", Revision: 2, Resources: []string{"hours"}, Served: true},
			{Establishment: "c", Revision: 4, Resources: []string{"hours"}, Served: true},
		}
		if diff := cmp.Diff(want, platformOf(t, ok[0], secretA).Data.Changes); diff != "" {
			t.Errorf("the delivery after the outage (-want +got):\n%s", diff)
		}

		// 410 disables the endpoint; what changes meanwhile is delivered once it is enabled.
		answer.Store(http.StatusGone)
		start = time.Now()
		publish(t, sigs, "e", 5, "hours")
		sleepUntil(start, time.Minute)
		if ep, err := d.Registry().Endpoint(t.Context(), webhook.PlatformScope, "pf_all"); err != nil || !ep.Disabled {
			t.Fatalf("after 410: %+v, %v; want it disabled", ep, err)
		}
		publish(t, sigs, "d", 6, "hours")
		sleepUntil(start, 2*time.Minute)
		answer.Store(http.StatusNoContent)
		if err := d.Registry().Enable(t.Context(), webhook.PlatformScope, "pf_all"); err != nil {
			t.Fatal(err)
		}
		sleepUntil(start, 3*time.Minute)
		ok = delivered()
		if len(ok) != 2 {
			t.Fatalf("%d deliveries accepted, want 2", len(ok))
		}
		got := platformOf(t, ok[1], secretA).Data.Changes
		if len(got) != 2 || got[0].Establishment != "e" || got[1].Establishment != "d" {
			t.Errorf("after enabling: %+v, want e and d", got)
		}
		changesOf(t, ok, secretA)
	})
}

// Two dispatchers share the work: each batch is delivered once, and a dispatcher restarted
// between windows loses nothing.
func TestPlatformBatchesOnceWithTwoDispatchers(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		nc := connect(t, startNATS(t, dir))
		cfg := testConfig(t, rcv)
		one, two := openDispatcher(t, nc, cfg), openDispatcher(t, nc, cfg)
		sigs := openSignals(t, nc)
		registerPlatform(t, one, "pf_all", rcv.url("/all"), secretA)
		stopOne := run(t, one)
		run(t, two)
		start := time.Now()
		for i := range 20 {
			publish(t, sigs, "e"+strconv.Itoa(i%7), int64(i+1), "hours")
		}
		sleepUntil(start, time.Minute)
		if n := rcv.count(); n != 1 {
			t.Fatalf("%d deliveries, want 1", n)
		}
		stopOne()
		publish(t, sigs, "e1", 30, "menus")
		// The stopped dispatcher's last pull may still be open on the server and take the signal:
		// the other handles it once its ack wait has passed, and delivers it a window later.
		sleepUntil(start, 3*time.Minute)
		state, batches := changesOf(t, rcv.requests(), secretA)
		if len(batches) != 2 || len(batches[0]) != 7 || state["e1"].Revision != 30 {
			t.Errorf("batches %v, want 7 establishments then e1 at 30", batches)
		}
	})
}

// Only a platform endpoint's latest batch can be redelivered: an older one would send revisions
// older than those delivered since.
func TestPlatformRedeliversOnlyTheLatestBatch(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		d, sigs, _ := runWithPlatform(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()
		publish(t, sigs, "a", 1, "hours")
		sleepUntil(start, time.Minute)
		publish(t, sigs, "a", 2, "menus")
		sleepUntil(start, 2*time.Minute)
		log, err := d.DeliveryLog(t.Context(), "pf_all", 10)
		if err != nil || len(log) != 2 {
			t.Fatalf("delivery log: %+v, %v; want 2 deliveries", log, err)
		}
		if err := d.Redeliver(t.Context(), log[1].ID); !errors.Is(err, webhook.ErrNotLatest) {
			t.Errorf("redeliver the older batch: %v, want ErrNotLatest", err)
		}
		if err := d.Redeliver(t.Context(), log[0].ID); err != nil {
			t.Errorf("redeliver the latest batch: %v", err)
		}
		sleepUntil(start, 3*time.Minute)
		state, _ := changesOf(t, rcv.requests(), secretA)
		if n := rcv.count(); n != 3 || state["a"].Revision != 2 {
			t.Errorf("%d deliveries, a at %d; want 3, a at 2", n, state["a"].Revision)
		}
	})
}
