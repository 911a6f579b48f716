package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// payloadOf decodes a received body.
func payloadOf(tb testing.TB, r received) webhook.Payload {
	tb.Helper()
	var p webhook.Payload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Fatalf("decode payload %s: %v", r.Body, err)
	}
	return p
}

// sentAt returns the webhook-timestamp of a request: the attempt's time, in seconds.
func sentAt(tb testing.TB, r received) time.Time {
	tb.Helper()
	s, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		tb.Fatalf("webhook-timestamp %q: %v", r.Header.Get("webhook-timestamp"), err)
	}
	return time.Unix(s, 0)
}

func TestDebounceMergesChangesOfOneWindow(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		nc := connect(t, startNATS(t, dir))
		d := openDispatcher(t, nc, testConfig(t, rcv))
		register(t, d, "chez-marcel", "wh_a", rcv.url("/a"), secretA)
		register(t, d, "la-cave", "wh_b", rcv.url("/b"), secretB)
		sigs := openSignals(t, nc)
		run(t, d)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		publish(t, sigs, "la-cave", 4, "menus", "menus/carte")
		publish(t, sigs, "sans-webhook", 9, "hours") // no endpoint: nothing happens
		sleepUntil(start, 10*time.Second)
		publish(t, sigs, "chez-marcel", 2, "menus", "menus/plat-du-jour")
		publish(t, sigs, "chez-marcel", 2, "menus", "menus/plat-du-jour") // re-emitted: deduplicated
		sleepUntil(start, 29*time.Second)
		publish(t, sigs, "chez-marcel", 3, "establishment", "menus/plat-du-jour")
		if n := rcv.count(); n != 0 {
			t.Fatalf("got %d deliveries before the window closed, want 0", n)
		}

		sleepUntil(start, 31*time.Second)
		reqs := rcv.requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d deliveries at the end of the window, want 2 (one per establishment)", len(reqs))
		}
		got := map[string]webhook.PayloadData{}
		for _, r := range reqs {
			p := payloadOf(t, r)
			if p.Type != webhook.EventContentUpdated {
				t.Errorf("got type %q, want %q", p.Type, webhook.EventContentUpdated)
			}
			if at := sentAt(t, r); at.Sub(start) != 30*time.Second {
				t.Errorf("%s delivered %s after the first change, want 30s", p.Data.Establishment, at.Sub(start))
			}
			got[p.Data.Establishment] = p.Data
		}
		want := map[string]webhook.PayloadData{
			"chez-marcel": {Establishment: "chez-marcel", Revision: 3, Resources: []string{"establishment", "hours", "menus", "menus/plat-du-jour"}},
			"la-cave":     {Establishment: "la-cave", Revision: 4, Resources: []string{"menus", "menus/carte"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("merged deliveries (-want +got):\n%s", diff)
		}

		// A change after the window opens the next one.
		publish(t, sigs, "chez-marcel", 4, "hours")
		sleepUntil(start, 5*time.Minute)
		reqs = rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("got %d deliveries, want 3", len(reqs))
		}
		p := payloadOf(t, reqs[2])
		if diff := cmp.Diff(webhook.PayloadData{Establishment: "chez-marcel", Revision: 4, Resources: []string{"hours"}}, p.Data); diff != "" {
			t.Errorf("next window's delivery (-want +got):\n%s", diff)
		}
		if at := sentAt(t, reqs[2]); at.Sub(start) != 61*time.Second {
			t.Errorf("next window delivered at +%s, want +61s", at.Sub(start))
		}
		ids := []string{payloadOf(t, reqs[0]).ID, payloadOf(t, reqs[1]).ID, p.ID}
		if unique := slices.Compact(slices.Sorted(slices.Values(ids))); len(unique) != 3 {
			t.Errorf("delivery ids %v are not unique", ids)
		}
	})
}

// A transition (the establishment stopped or started being served without a new revision) is not
// a delivery of the establishment's webhook: it announces revisions only.
func TestTransitionsAreNotDelivered(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		nc := connect(t, startNATS(t, dir))
		d := openDispatcher(t, nc, testConfig(t, rcv))
		register(t, d, "chez-marcel", "wh_a", rcv.url("/a"), secretA)
		sigs := openSignals(t, nc)
		run(t, d)
		start := time.Now()
		for _, tr := range []events.Signal{
			{Establishment: "chez-marcel", Revision: 3, Resources: []string{"hours"}, Unserved: true, Transition: events.TransitionUnserved, Stored: 8},
			{Establishment: "chez-marcel", Revision: 3, Resources: []string{"hours"}, Transition: events.TransitionServed, Stored: 9},
		} {
			if err := sigs.Publish(t.Context(), tr); err != nil {
				t.Fatal(err)
			}
		}
		sleepUntil(start, 2*time.Minute)
		if n := rcv.count(); n != 0 {
			t.Fatalf("got %d deliveries for transitions, want none", n)
		}
		publish(t, sigs, "chez-marcel", 4, "menus")
		sleepUntil(start, 4*time.Minute)
		reqs := rcv.requests()
		if len(reqs) != 1 {
			t.Fatalf("got %d deliveries after a content change, want 1", len(reqs))
		}
		want := webhook.PayloadData{Establishment: "chez-marcel", Revision: 4, Resources: []string{"menus"}}
		if diff := cmp.Diff(want, payloadOf(t, reqs[0]).Data); diff != "" {
			t.Errorf("delivery (-want +got):\n%s", diff)
		}
	})
}

// Changes arriving while windows close, for many establishments at once, each reach a delivery:
// every resource is delivered, revisions never go back, and the last delivery of each
// establishment carries its newest revision. It runs on real time: the race it guards against,
// a change handled while the server fires a window, needs real concurrency.
func TestChangesAtWindowCloseAreNotLost(t *testing.T) {
	rcv := newReceiver(t, nil)
	nc := connect(t, startNATS(t, t.TempDir()))
	cfg := testConfig(t, rcv)
	cfg.Window = time.Second
	d := openDispatcher(t, nc, cfg)
	sigs := openSignals(t, nc)
	const establishments, changes = 30, 200
	slug := func(i int) string { return "est-" + strconv.Itoa(i) }
	for i := range establishments {
		register(t, d, slug(i), "wh_"+strconv.Itoa(i), rcv.url("/"+slug(i)), secretA)
	}
	run(t, d)

	// Each establishment changes every 10 ms for 2 s: changes arrive as every window closes.
	var wg sync.WaitGroup
	for i := range establishments {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for j := 1; j <= changes; j++ {
				sig := events.Signal{Establishment: slug(i), Revision: int64(j), Resources: []string{"menus/m" + strconv.Itoa(j)}, Time: time.Now()}
				if err := sigs.Publish(context.Background(), sig); err != nil {
					t.Errorf("Publish(%s, %d): %v", sig.Establishment, j, err)
					return
				}
				<-tick.C
			}
		})
	}
	wg.Wait()

	resources := map[string]map[string]bool{}
	last := map[string]int64{}
	seen := 0
	done := func() bool {
		reqs := rcv.requests()
		for _, r := range reqs[seen:] {
			p := payloadOf(t, r).Data
			if p.Revision < last[p.Establishment] {
				t.Errorf("%s: revision %d delivered after %d", p.Establishment, p.Revision, last[p.Establishment])
			}
			last[p.Establishment] = max(last[p.Establishment], p.Revision)
			if resources[p.Establishment] == nil {
				resources[p.Establishment] = map[string]bool{}
			}
			for _, res := range p.Resources {
				resources[p.Establishment][res] = true
			}
		}
		seen = len(reqs)
		for i := range establishments {
			if last[slug(i)] != changes {
				return false
			}
		}
		return true
	}
	// A signal lost in flight under heavy load comes back after the consumer's ack wait (30 s).
	deadline := time.Now().Add(90 * time.Second)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for i := range establishments {
		s := slug(i)
		if last[s] != changes {
			t.Errorf("%s: last delivered revision %d, want %d", s, last[s], changes)
		}
		for j := 1; j <= changes; j++ {
			if res := "menus/m" + strconv.Itoa(j); !resources[s][res] {
				t.Errorf("%s: change %s in no delivery", s, res)
			}
		}
	}
}

// A window reads a bounded number of signals; the rest are read by the next window, opened at
// once, so a backlog is delivered in several deliveries and nothing is left behind.
func TestLargeBacklogIsReadOverSeveralWindows(t *testing.T) {
	defer webhook.SetMaxWindowSignals(3)()
	// The signals a window read are deleted one at a time, or purged when they are more.
	for _, deletes := range []int{64, 2} {
		t.Run(fmt.Sprintf("deletes=%d", deletes), func(t *testing.T) {
			defer webhook.SetMaxDeletes(deletes)()
			backlogOverSeveralWindows(t)
		})
	}
}

func backlogOverSeveralWindows(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		_, sigs := runWithEndpoint(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()
		for i := 1; i <= 7; i++ {
			publish(t, sigs, "chez-marcel", int64(i), "menus/m"+strconv.Itoa(i))
		}
		sleepUntil(start, 5*time.Minute)
		// Signals are handled concurrently, so which three a window reads may vary; what holds
		// is that each is delivered once and that revisions never go back.
		reqs := rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("got %d deliveries, want 3 (7 signals, 3 a window)", len(reqs))
		}
		seen := map[string]int{}
		var last int64
		for _, r := range reqs {
			p := payloadOf(t, r).Data
			if len(p.Resources) > 3 || p.Revision < last {
				t.Errorf("delivery %+v after revision %d: want at most 3 resources and no older revision", p, last)
			}
			last = p.Revision
			for _, res := range p.Resources {
				seen[res]++
			}
		}
		for i := 1; i <= 7; i++ {
			if n := seen["menus/m"+strconv.Itoa(i)]; n != 1 {
				t.Errorf("menus/m%d delivered %d times, want once", i, n)
			}
		}
		if last != 7 {
			t.Errorf("last delivered revision %d, want 7", last)
		}
	})
}

func TestFailingDeliveryIsRetriedFiveTimesWithGrowingGaps(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		d, sigs := runWithEndpoint(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, 31*time.Second)
		stats, err := d.Stats(t.Context())
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if want := (webhook.Stats{Pending: 1, Failing: 1, Endpoints: 1}); stats != want {
			t.Errorf("stats after a failed attempt: got %+v, want %+v", stats, want)
		}

		sleepUntil(start, 2*time.Hour)
		reqs := rcv.requests()
		if len(reqs) != 5 {
			t.Fatalf("got %d attempts, want 5", len(reqs))
		}
		id := reqs[0].Header.Get("webhook-id")
		body := string(reqs[0].Body)
		for i, r := range reqs {
			if r.Header.Get("webhook-id") != id || string(r.Body) != body {
				t.Errorf("attempt %d: id %s and body %s differ from the first attempt's", i+1, r.Header.Get("webhook-id"), r.Body)
			}
		}

		log, err := d.DeliveryLog(t.Context(), "wh_a", 0)
		if err != nil {
			t.Fatalf("DeliveryLog: %v", err)
		}
		if len(log) != 1 {
			t.Fatalf("got %d log records, want 1", len(log))
		}
		rec := log[0]
		if rec.Status != webhook.StatusFailed || len(rec.Attempts) != 5 || rec.ID != id {
			t.Fatalf("got record %s status %s with %d attempts, want %s failed with 5", rec.ID, rec.Status, len(rec.Attempts), id)
		}
		// Gaps: 10 s, 30 s, 2 min, 10 min, each ±20 %.
		nominal := []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}
		var prev time.Duration
		for i := 1; i < len(rec.Attempts); i++ {
			a := rec.Attempts[i]
			gap := a.Time.Sub(rec.Attempts[i-1].Time)
			lo, hi := nominal[i-1]*8/10, nominal[i-1]*12/10
			if gap < lo || gap > hi {
				t.Errorf("gap before attempt %d: got %s, want %s to %s", i+1, gap, lo, hi)
			}
			if gap <= prev {
				t.Errorf("gap before attempt %d: got %s, not longer than the previous %s", i+1, gap, prev)
			}
			prev = gap
			if a.Number != i+1 || a.StatusCode != 500 || a.Error == "" {
				t.Errorf("attempt %d: got %+v", i+1, a)
			}
		}

		stats, err = d.Stats(t.Context())
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if want := (webhook.Stats{Missed: 1, Endpoints: 1}); stats != want {
			t.Errorf("stats after giving up: got %+v, want %+v", stats, want)
		}
		ep, err := d.Registry().Endpoint(t.Context(), "chez-marcel", "wh_a")
		if err != nil {
			t.Fatalf("Endpoint: %v", err)
		}
		if diff := cmp.Diff([]string{"hours"}, ep.MissedResources); diff != "" {
			t.Errorf("missed resources (-want +got):\n%s", diff)
		}
	})
}

func TestNextDeliveryCarriesGivenUpResources(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.MaxAttempts = 2
		d, sigs := runWithEndpoint(t, dir, cfg, rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours", "menus/carte")
		sleepUntil(start, 5*time.Minute) // given up after 2 attempts
		publish(t, sigs, "chez-marcel", 2, "establishment")
		sleepUntil(start, 10*time.Minute)

		reqs := rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("got %d requests, want 3", len(reqs))
		}
		want := webhook.PayloadData{Establishment: "chez-marcel", Revision: 2, Resources: []string{"establishment", "hours", "menus/carte"}}
		if diff := cmp.Diff(want, payloadOf(t, reqs[2]).Data); diff != "" {
			t.Errorf("delivery after a give-up (-want +got):\n%s", diff)
		}
		ep, err := d.Registry().Endpoint(t.Context(), "chez-marcel", "wh_a")
		if err != nil {
			t.Fatalf("Endpoint: %v", err)
		}
		if ep.MissedResources != nil || ep.Failing {
			t.Errorf("got missed %v failing %v after a success, want none", ep.MissedResources, ep.Failing)
		}
	})
}

func TestRetryAfterIsHonouredWithinBounds(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "999999")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.Header().Set("Retry-After", "1") // shorter than the backoff: the backoff wins
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.MaxRetryAfter = 15 * time.Minute
		cfg.Jitter = -1
		d, sigs := runWithEndpoint(t, dir, cfg, rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, 2*time.Hour)
		log, err := d.DeliveryLog(t.Context(), "wh_a", 10)
		if err != nil || len(log) != 1 {
			t.Fatalf("DeliveryLog: %d records, %v; want 1", len(log), err)
		}
		rec := log[0]
		if rec.Status != webhook.StatusDelivered {
			t.Fatalf("got status %s, want delivered", rec.Status)
		}
		var gaps []time.Duration
		for i := 1; i < len(rec.Attempts); i++ {
			gaps = append(gaps, rec.Attempts[i].Time.Sub(rec.Attempts[i-1].Time))
		}
		want := []time.Duration{15 * time.Minute, 2 * time.Minute, 2 * time.Minute}
		if diff := cmp.Diff(want, gaps); diff != "" {
			t.Errorf("gaps (-want +got):\n%s", diff)
		}
	})
}

func TestNewerRevisionSupersedesRetryingDelivery(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.Backoff = []time.Duration{time.Minute, 2 * time.Minute}
		cfg.Jitter = -1
		d, sigs := runWithEndpoint(t, dir, cfg, rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, 35*time.Second) // first attempt failed at +30s, retry due at +90s
		publish(t, sigs, "chez-marcel", 2, "menus")
		sleepUntil(start, 30*time.Minute) // the new window closes at +65s

		reqs := rcv.requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d requests, want 2: the failed first attempt and the superseding delivery", len(reqs))
		}
		first, second := payloadOf(t, reqs[0]), payloadOf(t, reqs[1])
		want := webhook.PayloadData{Establishment: "chez-marcel", Revision: 2, Resources: []string{"hours", "menus"}}
		if diff := cmp.Diff(want, second.Data); diff != "" {
			t.Errorf("superseding delivery (-want +got):\n%s", diff)
		}
		if at := sentAt(t, reqs[1]); at.Sub(start) != 65*time.Second {
			t.Errorf("superseding delivery sent at +%s, want +65s", at.Sub(start))
		}
		log, err := d.DeliveryLog(t.Context(), "wh_a", 10)
		if err != nil {
			t.Fatalf("DeliveryLog: %v", err)
		}
		got := map[string]webhook.Status{}
		for _, r := range log {
			got[r.ID] = r.Status
			if r.ID == first.ID && r.Note != "superseded by "+second.ID {
				t.Errorf("superseded record note: got %q", r.Note)
			}
		}
		if diff := cmp.Diff(map[string]webhook.Status{first.ID: webhook.StatusSuperseded, second.ID: webhook.StatusDelivered}, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		if stats, err := d.Stats(t.Context()); err != nil || stats != (webhook.Stats{Endpoints: 1}) {
			t.Errorf("stats: got %+v, %v; want nothing pending or failing", stats, err)
		}
	})
}

func TestGoneDisablesEndpoint(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusGone))
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		d, sigs := runWithEndpoint(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, time.Hour)
		if n := rcv.count(); n != 1 {
			t.Fatalf("got %d requests, want 1: 410 is not retried", n)
		}
		ep, err := d.Registry().Endpoint(t.Context(), "chez-marcel", "wh_a")
		if err != nil {
			t.Fatalf("Endpoint: %v", err)
		}
		if !ep.Disabled || ep.DisabledReason == "" {
			t.Fatalf("got endpoint %+v, want it disabled with a reason", ep)
		}
		log, err := d.DeliveryLog(t.Context(), "wh_a", 0)
		if err != nil || len(log) != 1 || log[0].Status != webhook.StatusEndpointGone {
			t.Fatalf("got log %+v, %v; want one endpoint_gone record", log, err)
		}

		publish(t, sigs, "chez-marcel", 2, "menus")
		sleepUntil(start, 2*time.Hour)
		if n := rcv.count(); n != 1 {
			t.Fatalf("got %d requests, want none to a disabled endpoint", n)
		}
		if err := d.Redeliver(t.Context(), log[0].ID); !errors.Is(err, webhook.ErrEndpointDisabled) {
			t.Errorf("Redeliver to a disabled endpoint: got %v, want ErrEndpointDisabled", err)
		}

		// Enabled again, the endpoint is told at once what it missed: the change its 410 refused
		// and the one made while it was disabled. Then changes reach it as before.
		rcv.mu.Lock()
		rcv.respond = status(http.StatusOK)
		rcv.mu.Unlock()
		if err := d.Registry().Enable(t.Context(), "chez-marcel", "wh_a"); err != nil {
			t.Fatalf("Enable: %v", err)
		}
		sleepUntil(start, 2*time.Hour+time.Minute)
		reqs := rcv.requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d requests, want a delivery of the missed changes after Enable", len(reqs))
		}
		want := webhook.PayloadData{Establishment: "chez-marcel", Revision: 2, Resources: []string{"hours", "menus"}}
		if diff := cmp.Diff(want, payloadOf(t, reqs[1]).Data); diff != "" {
			t.Errorf("delivery after Enable (-want +got):\n%s", diff)
		}
		if ep, err := d.Registry().Endpoint(t.Context(), "chez-marcel", "wh_a"); err != nil || len(ep.MissedResources) != 0 {
			t.Errorf("endpoint after the catch-up: got %+v, %v, want no missed resources", ep, err)
		}
		publish(t, sigs, "chez-marcel", 3, "hours")
		sleepUntil(start, 3*time.Hour)
		reqs = rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("got %d requests, want the next change delivered", len(reqs))
		}
		want = webhook.PayloadData{Establishment: "chez-marcel", Revision: 3, Resources: []string{"hours"}}
		if diff := cmp.Diff(want, payloadOf(t, reqs[2]).Data); diff != "" {
			t.Errorf("next delivery (-want +got):\n%s", diff)
		}
	})
}

func TestRemovedEndpointGetsNoMoreAttempts(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		d, sigs := runWithEndpoint(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours", "menus/ancienne-carte")
		sleepUntil(start, 35*time.Second)
		if err := d.Registry().Remove(t.Context(), "chez-marcel", "wh_a"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		sleepUntil(start, time.Hour)
		if n := rcv.count(); n != 1 {
			t.Errorf("got %d requests, want the one attempt before Remove", n)
		}
		log, err := d.DeliveryLog(t.Context(), "wh_a", 0)
		if err != nil || len(log) != 1 || log[0].Status != webhook.StatusEndpointRemoved {
			t.Fatalf("got log %+v, %v; want one endpoint_removed record", log, err)
		}
		if diff := cmp.Diff([]string{"hours", "menus/ancienne-carte"}, log[0].Resources); diff != "" {
			t.Errorf("logged resources (-want +got):\n%s", diff)
		}
		if stats, err := d.Stats(t.Context()); err != nil || stats != (webhook.Stats{}) {
			t.Errorf("stats: got %+v, %v; want zeros", stats, err)
		}
	})
}
