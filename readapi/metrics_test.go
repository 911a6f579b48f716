package readapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// withMetrics returns cfg counting into a registry of its own.
func withMetrics(tb testing.TB, cfg Config) Config {
	tb.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Metrics = m
	return cfg
}

// TestMetricsCountRequests: a 200, a 304, a 404 and a 429 are each counted under their route and
// status, the refusal under its quota, and every request's latency under its route.
func TestMetricsCountRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	h := newTestServer(t, fixtureSource(t), Config{KeyQuota: 2, IPQuota: -1, Now: clock.Now, Metrics: m}).Handler()
	target := "/api/v1/establishments/" + alice
	first := serve(t, h, http.MethodGet, target, withKey(keyAlice))
	if first.Code != http.StatusOK {
		t.Fatalf("first: %d", first.Code)
	}
	if w := serve(t, h, http.MethodGet, target, withETag(keyAlice, first.Header().Get("ETag"))); w.Code != http.StatusNotModified {
		t.Fatalf("304: %d", w.Code)
	}
	serve(t, h, http.MethodGet, target, withKey(keyAlice)) // the second of the quota
	if w := serve(t, h, http.MethodGet, target, withKey(keyAlice)); w.Code != http.StatusTooManyRequests {
		t.Fatalf("429: %d", w.Code)
	}
	if w := serve(t, h, http.MethodGet, "/no/such/path", nil); w.Code != http.StatusNotFound {
		t.Fatalf("404: %d", w.Code)
	}
	for _, c := range []struct {
		route, code string
		want        float64
	}{{"establishment", "200", 2}, {"establishment", "304", 1}, {"establishment", "429", 1}, {"other", "404", 1}, {"hours", "200", 0}} {
		got := testutil.ToFloat64(m.requests[routeIndex(c.route)][codeIndex(c.code)])
		if got != c.want {
			t.Errorf("requests %s %s: %v, want %v", c.route, c.code, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.refused[1]); got != 1 {
		t.Errorf("key quota refusals: %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "publisher_read_api_request_duration_seconds"); err != nil || n != len(metricRoutes) {
		t.Errorf("latency series: %d, %v", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func routeIndex(name string) int {
	for i, r := range metricRoutes {
		if r == name {
			return i
		}
	}
	panic(name)
}

func codeIndex(code string) int {
	for i, c := range metricCodes {
		if code == strconv.Itoa(c) {
			return i
		}
	}
	return len(metricCodes)
}

// TestReadyzFollowsTheLag: a node whose mirror is behind the bucket for longer than allowed is
// not ready, so that a balancer sends its traffic elsewhere; it is again once caught up.
func TestReadyzFollowsTheLag(t *testing.T) {
	var behind time.Duration
	h := newTestServer(t, fixtureSource(t), Config{Behind: func() time.Duration { return behind }, MaxLag: 30 * time.Second}).Handler()
	for _, c := range []struct {
		behind time.Duration
		want   int
	}{{0, 200}, {29 * time.Second, 200}, {31 * time.Second, 503}, {0, 200}} {
		behind = c.behind
		if w := serve(t, h, http.MethodGet, "/readyz", nil); w.Code != c.want {
			t.Errorf("behind %s: /readyz %d, want %d", c.behind, w.Code, c.want)
		}
	}
	// /healthz says the process runs, however far behind.
	behind = time.Hour
	if w := serve(t, h, http.MethodGet, "/healthz", nil); w.Code != 200 {
		t.Errorf("/healthz behind an hour: %d", w.Code)
	}
}

// TestMetricsCountAPanicAsA500: a handler that panics is answered 500 by the server's recovery
// and counted as such, so that an alert on 5xx sees it.
func TestMetricsCountAPanicAsA500(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, panicSource{v: "boom"}, Config{Metrics: m}).Handler()
	if w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice)); w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	if got := testutil.ToFloat64(m.requests[routeEstablishment][codeIndex("500")]); got != 1 {
		t.Errorf("500s counted: %v, want 1", got)
	}
}
