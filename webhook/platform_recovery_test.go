package webhook_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// verifies checks r's Standard Webhooks signature against secret alone, with that
// specification's own library.
func verifies(tb testing.TB, r received, secret string) error {
	tb.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return v.VerifyIgnoringTimestamp(r.Body, r.Header)
}

// A platform endpoint's rotated secret signs its deliveries with both secrets during the grace
// period, then with the new one alone.
func TestPlatformRotationSignsWithBothSecrets(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		d, sigs, _ := runWithPlatform(t, dir, testConfig(t, rcv), rcv)
		start := time.Now()
		publish(t, sigs, "a", 1, "hours")
		sleepUntil(start, time.Minute)
		if err := d.Registry().RotateSecret(t.Context(), webhook.PlatformScope, "pf_all", secretB, time.Hour); err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		publish(t, sigs, "b", 2, "hours")
		sleepUntil(start, 2*time.Minute)
		sleepUntil(start, 2*time.Hour)
		publish(t, sigs, "c", 3, "hours")
		sleepUntil(start, 3*time.Hour)

		reqs := rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d deliveries, want 3", len(reqs))
		}
		for i, tt := range []struct{ a, b bool }{{true, false}, {true, true}, {false, true}} {
			if got := verifies(t, reqs[i], secretA) == nil; got != tt.a {
				t.Errorf("delivery %d verifies with the old secret: %v, want %v", i+1, got, tt.a)
			}
			if got := verifies(t, reqs[i], secretB) == nil; got != tt.b {
				t.Errorf("delivery %d verifies with the new secret: %v, want %v", i+1, got, tt.b)
			}
		}
	})
}

// A dispatcher stopped, with the NATS server, while a platform batch waits for its retry loses
// nothing: after the restart that batch is retried with the same id, the batches after it
// follow in order, and each establishment arrives once.
func TestPlatformBatchSurvivesRestart(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.Backoff, cfg.Jitter, cfg.PlatformBatch = []time.Duration{time.Minute}, -1, 2
		srv := startNATS(t, dir)
		nc := connect(t, srv)
		first := openDispatcher(t, nc, cfg)
		sigs := openSignals(t, nc)
		registerPlatform(t, first, "pf_all", rcv.url("/all"), secretA)
		stop := run(t, first)
		start := time.Now()
		for i, slug := range []string{"a", "b", "c", "d", "e"} {
			publish(t, sigs, slug, int64(i+1), "hours")
		}
		sleepUntil(start, 40*time.Second) // the first batch failed at +30s; its retry is due at +90s
		if n := rcv.count(); n != 1 {
			t.Fatalf("%d requests before the restart, want 1", n)
		}
		stop()
		first.Close()
		nc.Close()
		stopNATS(srv)

		nc = connect(t, startNATS(t, dir))
		run(t, openDispatcher(t, nc, cfg))
		sleepUntil(start, time.Hour)

		reqs := rcv.requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests, want 4: a failed one, its retry and two more batches", len(reqs))
		}
		if reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
			t.Errorf("the retry after the restart has another delivery id")
		}
		var order []string
		for _, r := range reqs[1:] {
			for _, c := range platformOf(t, r, secretA).Data.Changes {
				order = append(order, c.Establishment)
			}
		}
		if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, order); diff != "" {
			t.Errorf("establishments delivered (-want +got):\n%s", diff)
		}
	})
}

// A platform endpoint behind the signals kept (here purged, as retention would) goes on from
// the first signal kept: that delivery is marked gap, and none after it.
func TestPlatformGapWhenSignalsAreGone(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if refuse.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.MaxAttempts = 1
		_, sigs, nc := runWithPlatform(t, dir, cfg, rcv)
		start := time.Now()
		publish(t, sigs, "a", 1, "hours")
		publish(t, sigs, "b", 2, "hours")
		sleepUntil(start, time.Minute) // given up: its cursor stays before a
		purgeSignals(t, nc, sigs)
		refuse.Store(false)
		publish(t, sigs, "c", 3, "menus")
		sleepUntil(start, 2*time.Minute)
		publish(t, sigs, "d", 4, "menus")
		sleepUntil(start, 3*time.Minute)

		reqs := rcv.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3: the one given up, then c with the gap, then d", len(reqs))
		}
		for i, want := range []struct {
			slug string
			gap  bool
		}{{"c", true}, {"d", false}} {
			got := platformOf(t, reqs[i+1], secretA).Data
			if got.Gap != want.gap || len(got.Changes) != 1 || got.Changes[0].Establishment != want.slug {
				t.Errorf("delivery %d: %+v, want %s alone, gap %v", i+2, got, want.slug, want.gap)
			}
		}
		if !strings.Contains(string(reqs[1].Body), `"gap":true`) {
			t.Errorf("the gap's body %s lacks \"gap\":true", reqs[1].Body)
		}
		last, err := sigs.LastSequence(t.Context())
		cur, perr := events.ParseCursor(platformOf(t, reqs[2], secretA).Data.Cursor)
		if err != nil || perr != nil || cur.Signal != last {
			t.Errorf("the last delivery's cursor %+v (%v), want signal %d (%v)", cur, perr, last, err)
		}
	})
}

// purgeSignals drops every signal stored so far, as the stream's retention would.
func purgeSignals(tb testing.TB, nc *nats.Conn, sigs *events.Signals) {
	tb.Helper()
	last, err := sigs.LastSequence(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := js.Stream(tb.Context(), events.SignalStreamName)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Purge(tb.Context(), jetstream.WithPurgeSequence(last+1)); err != nil {
		tb.Fatalf("purge the signals: %v", err)
	}
}
