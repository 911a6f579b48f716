package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// --follow asks again an admin API that answered 503, prints the page it then gets, and ends
// without an error when interrupted; without --follow, the 503 ends the command.
func TestChangesFollowAsksAgain(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	printed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		n := asked
		mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"Service unavailable","details":["the store is starting"]}`)
		case 2:
			io.WriteString(w, `{"changes":[{"establishment":"a","content_revision":4,"resources":["hours","menus"],"served":true}],"next":"c2"}`)
		default:
			close(printed)
			<-r.Context().Done() // a long poll the client ends
		}
	}))
	t.Cleanup(srv.Close)
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": srv.URL, "PUBLISHER_ADMIN_TOKEN": "secret"}[k]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errs bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Changes(ctx, []string{"--follow"}, &out, &errs, env) }()
	select {
	case <-printed:
	case <-ctx.Done():
		t.Fatal("no third request")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("interrupted follow: %v", err)
	}
	if got, want := out.String(), "a 4 served hours,menus\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if !strings.Contains(errs.String(), "503 Service Unavailable") || !strings.Contains(errs.String(), "trying again in 0s") || !strings.Contains(errs.String(), "cursor: c2\n") {
		t.Errorf("stderr %q: want the 503, the next try, and the cursor", errs.String())
	}

	mu.Lock()
	asked = 0
	mu.Unlock()
	if err := Changes(t.Context(), nil, &out, &errs, env); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("without --follow, a 503: %v, want the error", err)
	}
}

// Without --follow, a page without a change that moves the cursor is not the end: the command
// stops once a page neither lists a change nor moves the cursor.
func TestChangesStopsWhenCaughtUp(t *testing.T) {
	pages := map[string]string{
		"":   `{"changes":[],"next":"c1"}`,
		"c1": `{"changes":[{"establishment":"b","content_revision":2,"resources":[],"served":false}],"next":"c2"}`,
		"c2": `{"changes":[],"next":"c2"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, pages[r.URL.Query().Get("after")])
	}))
	t.Cleanup(srv.Close)
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": srv.URL, "PUBLISHER_ADMIN_TOKEN": "secret"}[k]
	}
	var out, errs bytes.Buffer
	if err := Changes(t.Context(), nil, &out, &errs, env); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "b 2 unserved \n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if got, want := errs.String(), "cursor: c1\ncursor: c2\ncursor: c2\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}
