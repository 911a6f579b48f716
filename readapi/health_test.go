package readapi

import (
	"context"
	"net/http"
	"testing"
)

const (
	bodyStatusOK = `{"status":"ok"}`
	bodyNotReady = `{"error":"Not ready"}`
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	s := newServer(fixtureSource(t), make(chan struct{}), Config{Logger: discardLogger()})
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		w := serve(t, s.Handler(), method, "/healthz", nil)
		checkAnswer(t, w, method, answer{status: http.StatusOK, body: bodyStatusOK,
			header: map[string]string{"Cache-Control": "no-store"}})
	}
	w := serve(t, s.Handler(), http.MethodPost, "/healthz", nil)
	checkAnswer(t, w, http.MethodPost, answer{status: http.StatusMethodNotAllowed, body: bodyMethodNotAllowed})
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	ready := make(chan struct{})
	h := newServer(fixtureSource(t), ready, Config{Logger: discardLogger()}).Handler()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		checkAnswer(t, serve(t, h, method, "/readyz", nil), method, errAnswer(http.StatusServiceUnavailable, bodyNotReady))
	}
	close(ready)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		checkAnswer(t, serve(t, h, method, "/readyz", nil), method, answer{status: http.StatusOK, body: bodyStatusOK})
	}
}

// TestReadyzSaysWhatIsDegraded: reads go on while another part of the process fails, so /readyz
// stays 200 and names what is degraded.
func TestReadyzSaysWhatIsDegraded(t *testing.T) {
	t.Parallel()
	ready := make(chan struct{})
	close(ready)
	var parts []string
	h := newServer(fixtureSource(t), ready, Config{Logger: discardLogger(), Degraded: func() []string { return parts }}).Handler()
	checkAnswer(t, serve(t, h, http.MethodGet, "/readyz", nil), http.MethodGet, answer{status: http.StatusOK, body: bodyStatusOK})
	parts = []string{"projector: lease lost", `storage: "full"`}
	checkAnswer(t, serve(t, h, http.MethodGet, "/readyz", nil), http.MethodGet, answer{status: http.StatusOK,
		body: `{"status":"degraded","degraded":["projector: lease lost","storage: \"full\""]}`})
	checkAnswer(t, serve(t, h, http.MethodHead, "/readyz", nil), http.MethodHead, answer{status: http.StatusOK,
		body: `{"status":"degraded","degraded":["projector: lease lost","storage: \"full\""]}`})
}

// TestProbesAreNotCounted sends probes from an address whose quotas allow one request each.
func TestProbesAreNotCounted(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, fixtureSource(t), Config{IPQuota: 1, KeyQuota: 1, RedirectQuota: 1, Now: newFakeClock().Now}).Handler()
	for range 100 {
		for _, path := range []string{"/healthz", "/readyz"} {
			if w := serve(t, h, http.MethodGet, path, nil); w.Code != http.StatusOK {
				t.Fatalf("GET %s: got %d, want 200", path, w.Code)
			}
		}
	}
	if w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice)); w.Code != http.StatusOK {
		t.Errorf("API request after the probes: got %d, want 200", w.Code)
	}
	if w := serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil); w.Code != http.StatusFound {
		t.Errorf("redirect after the probes: got %d, want 302", w.Code)
	}
}

// TestReadyzFollowsMirror checks /readyz against a real mirror: not ready before it has loaded
// the bucket, ready and serving after.
func TestReadyzFollowsMirror(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 7))
	m, err := NewMirror(kv, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Mirror: m, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := s.Handler()
	checkAnswer(t, serve(t, h, http.MethodGet, "/readyz", nil), http.MethodGet, errAnswer(http.StatusServiceUnavailable, bodyNotReady))

	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitReady(t, m)
	checkAnswer(t, serve(t, h, http.MethodGet, "/readyz", nil), http.MethodGet, answer{status: http.StatusOK, body: bodyStatusOK})
	w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, answer{status: http.StatusOK, body: body(alice, "establishment"), header: map[string]string{
		"RateLimit-Policy": specPolicies, "RateLimit": `"key";r=119;t=30`, "Content-Revision": "7"}})
}
