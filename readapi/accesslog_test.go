package readapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAccessLog(t *testing.T) {
	t.Parallel()
	lb := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clock := newFakeClock()
	h := newTestServer(t, fixtureSource(t), Config{Logger: logger, AccessLog: true, Now: clock.Now}).Handler()

	serveFrom(t, h, "192.0.2.1:1234", http.MethodGet, "/api/v1/establishments/"+alice+"/menus/lunch?locale=en", withKey(keyAlice))
	serveFrom(t, h, "192.0.2.1:1234", http.MethodHead, "/api/v1/establishments/"+alice, withKey(keyBob))
	serveFrom(t, h, "[2001:db8::1]:1234", http.MethodGet, "/r/menus?establishment="+alice+"&menu_type=lunch", nil)
	serveFrom(t, h, "192.0.2.1:1234", http.MethodGet, "/healthz", nil)
	serveFrom(t, h, "192.0.2.1:1234", http.MethodGet, "/api/v1/establishments/Not-A-Slug", withKey(keyAlice))

	out := lb.String()
	for _, secret := range []string{keyAlice, keyBob, "X-Api-Key", "Api-Key"} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
	var got []map[string]any
	for line := range strings.Lines(out) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, ok := rec["duration"]; !ok {
			t.Errorf("log line %q: no duration", line)
		}
		got = append(got, rec)
	}
	detail := body(alice, "menus/lunch.en")
	want := []map[string]any{
		{"level": "INFO", "msg": "request", "method": "GET", "path": "/api/v1/establishments/" + alice + "/menus/lunch",
			"query": "locale=en", "status": 200.0, "bytes": float64(len(detail)), "ip": "192.0.2.1", "slug": alice},
		{"level": "INFO", "msg": "request", "method": "HEAD", "path": "/api/v1/establishments/" + alice,
			"query": "", "status": 401.0, "bytes": 0.0, "ip": "192.0.2.1", "slug": alice},
		{"level": "INFO", "msg": "request", "method": "GET", "path": "/r/menus",
			"query": "establishment=" + alice + "&menu_type=lunch", "status": 302.0, "bytes": 0.0, "ip": "2001:db8::1", "slug": alice},
		{"level": "DEBUG", "msg": "request", "method": "GET", "path": "/healthz",
			"query": "", "status": 200.0, "bytes": float64(len(bodyStatusOK)), "ip": "192.0.2.1", "slug": ""},
		{"level": "INFO", "msg": "request", "method": "GET", "path": "/api/v1/establishments/Not-A-Slug",
			"query": "", "status": 404.0, "bytes": float64(len(bodyNotFound)), "ip": "192.0.2.1", "slug": ""},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "time" || k == "duration" })); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

func TestAccessLogOff(t *testing.T) {
	t.Parallel()
	logger, logs := newTestLogger()
	h := newTestServer(t, fixtureSource(t), Config{Logger: logger}).Handler()
	serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice))
	serve(t, h, http.MethodGet, "/nothing", nil)
	if got := logs.String(); got != "" {
		t.Errorf("log without AccessLog: got %q, want nothing", got)
	}
}

// TestAccessLogPanic checks that a request answered 500 after a panic is logged with that status.
func TestAccessLogPanic(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	h := newTestServer(t, panicSource{v: "boom"}, Config{Logger: logger, AccessLog: true, Now: func() time.Time { return time.Unix(0, 0) }}).Handler()
	serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil)
	out := buf.String()
	if !strings.Contains(out, "panic serving request") || !strings.Contains(out, "msg=request") || !strings.Contains(out, "status=500") {
		t.Errorf("log: got %q, want the panic and a request line with status 500", out)
	}
}
