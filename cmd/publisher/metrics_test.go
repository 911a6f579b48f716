package main

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMetricsAfterTraffic scrapes /metrics after real traffic: a 200, a 304, a 404 and a 429 are
// each counted under their labels, the projector's position is the log's last sequence, the
// connections are up, and the Go and process collectors answer. Profiles are served behind the
// admin token.
func TestMetricsAfterTraffic(t *testing.T) {
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()
	roots := failing.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.MetricsAddr, c.KeyQuota = "127.0.0.1:0", 3
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})
	key := importDemo(t, m)
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "`+failing.URL+`/hook"}`)); r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), []byte(`"name": "Chez Marcel et fils"`), 1)); r.status != http.StatusOK {
		t.Fatalf("change: %d %s", r.status, r.body)
	}
	first := m.get(t, est, key)
	if first.status != http.StatusOK {
		t.Fatalf("get: %d", first.status)
	}
	if r := m.read(t, http.MethodGet, est, "X-Api-Key", key, "If-None-Match", first.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Fatalf("304: %d", r.status)
	}
	m.get(t, est, key)
	m.get(t, est, key)
	if r := m.get(t, est, key); r.status != http.StatusTooManyRequests {
		t.Fatalf("429: %d", r.status)
	}
	if r := m.read(t, http.MethodGet, "/nothing/here"); r.status != http.StatusNotFound {
		t.Fatalf("404: %d", r.status)
	}

	// A destination whose broker cannot be reached: failing, its attempts counted.
	dest := m.addDestination(t, `{"type": "kafka", "brokers": ["127.0.0.1:1"], "topic": "menus", "start": "all"}`, "")
	eventually(t, "the unreachable destination failing", func() bool {
		return scrape(t, m.MetricsURL+"/metrics")[`publisher_destination_state{destination="`+dest+`",state="failing",type="kafka"}`] == "1"
	})

	// The mirror caught up: not behind, as the lag check, once a second, finds.
	eventually(t, "the mirror found caught up", func() bool { return m.mirrorLag.Behind() == 0 })
	// The change's delivery fails at the receiver: one attempt counted, to be retried.
	eventually(t, "a failed webhook attempt counted", func() bool {
		return scrape(t, m.MetricsURL+"/metrics")[`publisher_webhook_attempts_total{outcome="retrying"}`] == "1"
	})
	metrics := scrape(t, m.MetricsURL+"/metrics")
	for line, want := range map[string]string{
		`publisher_read_api_requests_total{code="200",route="establishment"}`:                             "3",
		`publisher_read_api_requests_total{code="304",route="establishment"}`:                             "1",
		`publisher_read_api_requests_total{code="429",route="establishment"}`:                             "1",
		`publisher_read_api_requests_total{code="404",route="other"}`:                                     "1",
		`publisher_read_api_quota_refusals_total{quota="key"}`:                                            "1",
		`publisher_nats_connected{connection="publisher"}`:                                                "1",
		`publisher_mirror_establishments`:                                                                 "1",
		`publisher_mirror_behind_seconds`:                                                                 "0",
		`publisher_webhook_failing_endpoints`:                                                             "1",
		`publisher_admin_requests_total{code="201",route="PUT /admin/v1/establishments/:slug"}`:           "1",
		`publisher_admin_requests_total{code="201",route="POST /admin/v1/establishments/:slug/webhooks"}`: "1",
		`publisher_projector_changes_total`:                                                               "2",
		`publisher_destinations{state="failing"}`:                                                         "1",
		`publisher_destination_published_total{destination="` + dest + `",type="kafka"}`:                  "0",
	} {
		if got := metrics[line]; got != want {
			t.Errorf("%s = %q, want %s", line, got, want)
		}
	}
	if metrics["publisher_projector_position"] == "" || metrics["publisher_projector_position"] != metrics["publisher_log_last_sequence"] {
		t.Errorf("projector position %q, log's last sequence %q: want them equal", metrics["publisher_projector_position"], metrics["publisher_log_last_sequence"])
	}
	for _, name := range []string{"publisher_mirror_document_bytes", "publisher_mirror_held_bytes"} {
		if v, err := strconv.ParseFloat(metrics[name], 64); err != nil || v <= 0 {
			t.Errorf("%s = %q, want the bytes of the demo establishment's bundle", name, metrics[name])
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "publisher_webhook_endpoints", "publisher_clock_passes_total", `publisher_read_api_request_duration_seconds_count{route="establishment"}`,
		`publisher_destination_lag_seconds{destination="` + dest + `",type="kafka"}`, "publisher_destinations_max_lag_seconds"} {
		if metrics[name] == "" {
			t.Errorf("no %s", name)
		}
	}

	// The deployment's alerts and dashboard name only metrics a process serves.
	families := map[string]bool{}
	for series := range metrics {
		name, _, _ := strings.Cut(series, "{")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		families[name] = true
	}
	for _, file := range []string{"deploy/alerts.yml", "deploy/grafana/dashboards/publisher.json"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := metricName.FindAllString(string(text), -1)
		if len(names) == 0 {
			t.Errorf("%s names no metric", file)
		}
		for _, name := range names {
			name = strings.TrimSuffix(name, "_bucket")
			if !families[name] {
				t.Errorf("%s: %s is not served", file, name)
			}
		}
	}

	if r := do(t, http.MethodGet, m.AdminURL+"/admin/debug/pprof/heap?debug=1", nil); r.status != http.StatusUnauthorized {
		t.Errorf("a profile without the token: %d", r.status)
	}
	r := do(t, http.MethodGet, m.AdminURL+"/admin/debug/pprof/heap?debug=1", nil, "Authorization", "Bearer "+testAdminToken)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("heap profile")) {
		t.Errorf("heap profile with the token: %d %.100s", r.status, r.body)
	}
}

// metricName finds the publisher's metric names in a text.
var metricName = regexp.MustCompile(`\bpublisher_[a-z_]+[a-z]`)

// scrape returns the samples of a Prometheus text exposition by name and labels.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	r := do(t, http.MethodGet, url, nil)
	if r.status != http.StatusOK {
		t.Fatalf("scrape: %d", r.status)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			out[line[:i]] = line[i+1:]
		}
	}
	return out
}
