package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// The feed's parameters are checked before the feed is asked: each bad one is a 400 naming it;
// good ones reach the feed as given, and its refusals keep their kinds.
func TestChangesParameters(t *testing.T) {
	t.Parallel()
	type call struct {
		after       string
		limit       int
		wait        time.Duration
		unreachable bool
	}
	var got call
	api, err := NewAPI(Config{
		Commands: &app.Commands{}, Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Changes: func(_ context.Context, after string, limit int, wait time.Duration) (any, error) {
			got = call{after: after, limit: limit, wait: wait}
			if after == "old" {
				return nil, &app.Refusal{Kind: app.KindGone, Err: errors.New("after: no longer kept")}
			}
			return map[string]any{"changes": []any{}, "next": "n"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := api.Handler()
	for _, tc := range []struct {
		query  string
		status int
		field  string
		want   call
	}{
		{"", http.StatusOK, "", call{limit: 1000}},
		{"?after=abc&limit=5&wait=30", http.StatusOK, "", call{after: "abc", limit: 5, wait: 30 * time.Second}},
		{"?wait=1m", http.StatusOK, "", call{limit: 1000, wait: time.Minute}},
		{"?limit=0", http.StatusBadRequest, "limit", call{unreachable: true}},
		{"?limit=1001", http.StatusBadRequest, "limit", call{unreachable: true}},
		{"?limit=x", http.StatusBadRequest, "limit", call{unreachable: true}},
		{"?wait=61s", http.StatusBadRequest, "wait", call{unreachable: true}},
		{"?wait=-1s", http.StatusBadRequest, "wait", call{unreachable: true}},
		{"?wait=soon", http.StatusBadRequest, "wait", call{unreachable: true}},
		{"?after=old", http.StatusGone, "after", call{after: "old", limit: 1000}},
	} {
		got = call{unreachable: true}
		req := httptest.NewRequest(http.MethodGet, "/admin/v1/changes"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.query, w.Code, tc.status, w.Body)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: the feed was asked %+v, want %+v", tc.query, got, tc.want)
		}
		if tc.field == "" {
			continue
		}
		var body errorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Details) == 0 || !strings.HasPrefix(body.Details[0], tc.field+":") {
			t.Errorf("%s: body %s does not name %s", tc.query, w.Body, tc.field)
		}
	}
}

// A long poll of the feed does not hold a turn among the requests in flight: with one turn, the
// other routes are served while it waits.
func TestChangesWaitOutsideTheBound(t *testing.T) {
	t.Parallel()
	waiting, release := make(chan struct{}), make(chan struct{})
	api, err := NewAPI(Config{
		Commands: &app.Commands{}, Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxInFlight: 1,
		Changes: func(ctx context.Context, _ string, _ int, _ time.Duration) (any, error) {
			close(waiting)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]any{"changes": []any{}, "next": "n"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	get := func(path string) int {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a request kept waiting fails
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	polled := make(chan int, 1)
	go func() { polled <- get("/admin/v1/changes?wait=60s") }()
	<-waiting
	if got := get("/admin/v1/status"); got != http.StatusOK {
		t.Errorf("status while a long poll waits: %d, want 200", got)
	}
	close(release)
	if got := <-polled; got != http.StatusOK {
		t.Errorf("long poll: %d, want 200", got)
	}
}
