package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencarte/publisher/events/natstest"
)

// TestProcessesStartBeforeTheirCluster starts the processes a deployment runs on a three-node NATS
// cluster (one with the writing roles, two read nodes, each connected to another node) before
// the cluster itself, then the cluster. None exits: each waits, says so in its log and, for a
// read node, in its readiness, then runs; and a change made through the first is served by both
// read nodes.
func TestProcessesStartBeforeTheirCluster(t *testing.T) {
	urls, startCluster := natstest.PlanCluster(t)
	roles := [][]string{{roleProjector, roleWebhook, roleClock, roleAdmin}, {roleAPI}, {roleAPI}}
	mains := make([]*Main, len(roles))
	logs := make([]*syncBuffer, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, r := range roles {
		logs[i] = &syncBuffer{}
		mains[i] = &Main{Config: Config{
			NATSURL: urls[i], Replicas: 3, Roles: r,
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t)), AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
			Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, KeyQuota: -1, IPQuota: -1,
			PublicURL: "https://menus.example",
		}, Logger: slog.New(slog.NewTextHandler(logs[i], nil))}
		t.Cleanup(mains[i].Close)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs[i] = mains[i].Open(ctx)
		})
	}
	// A read node answers at once: alive, not ready, and what it waits for.
	reader := "http://" + mains[1].Config.HTTPAddr
	eventually(t, "a read node saying what it waits for", func() bool {
		resp, err := http.Get(reader + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Waiting-For") != ""
	})
	if r := do(t, http.MethodGet, reader+"/healthz", nil); r.status != http.StatusOK {
		t.Errorf("healthz while waiting: got %d", r.status)
	}
	startCluster()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d (%s): %v\n%s", i, strings.Join(roles[i], ","), err, logs[i])
		}
		if !strings.Contains(logs[i].String(), "waiting for JetStream") {
			t.Errorf("process %d (%s) never said what it waited for:\n%s\nother:%s", i, strings.Join(roles[i], ","), logs[i], logs[1])
		}
	}
	key := importDemo(t, mains[0])
	for _, m := range mains[1:] {
		eventually(t, "the change served by a read node", func() bool { return m.get(t, est, key).status == http.StatusOK })
		if r := m.read(t, http.MethodGet, "/readyz"); r.status != http.StatusOK {
			t.Errorf("readyz of a running read node: got %d", r.status)
		}
	}
}

func TestRedactedURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:secret@n1:4222":                     "nats://n1:4222",
		"nats://token@n1:4222, nats://u:p@n2:4222":       "nats://n1:4222,nats://n2:4222",
		"nats://n1:4222":                                 "nats://n1:4222",
		"tls://admin:pa%40ss@nats.internal:4443/?x=1#fr": "tls://nats.internal:4443/?x=1#fr",
	} {
		if got := redactedURL(in); got != want {
			t.Errorf("redactedURL(%q) = %q, want %q", in, got, want)
		}
	}
}
