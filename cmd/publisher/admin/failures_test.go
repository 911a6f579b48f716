package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestFailedTokensAreLimitedPerAddress: an address that sent ten wrong tokens within a minute is
// refused, even with the right one, until the minute ends; another address is not, nor an IPv6
// address outside the /64.
func TestFailedTokensAreLimitedPerAddress(t *testing.T) {
	f := newFixture(t)
	h := f.srv.Config.Handler
	send := func(addr, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/admin/v1/status", nil)
		req.RemoteAddr = addr
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range maxFailures {
		if w := send("192.0.2.1:1000", "wrong-token-0123456789"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: got %d", i+1, w.Code)
		}
	}
	for _, token := range []string{"wrong-token-0123456789", testToken} {
		w := send("192.0.2.1:2000", token)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Errorf("after %d failures, token %q: got %d, Retry-After %q; want 429", maxFailures, token, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if w := send("192.0.2.2:1000", testToken); w.Code != http.StatusOK {
		t.Errorf("another address: got %d, want 200", w.Code)
	}
	for range maxFailures {
		send("[2001:db8:1:2::1]:1000", "")
	}
	if w := send("[2001:db8:1:2::ffff]:1000", testToken); w.Code != http.StatusTooManyRequests {
		t.Errorf("the same IPv6 /64: got %d, want 429", w.Code)
	}
	if w := send("[2001:db8:1:3::1]:1000", testToken); w.Code != http.StatusOK {
		t.Errorf("another IPv6 /64: got %d, want 200", w.Code)
	}
	// The window ends a minute after the first failure.
	fl := newFailures()
	client := clientOf(httptest.NewRequest(http.MethodGet, "/", nil))
	start := time.Unix(1000, 0)
	for i := range maxFailures {
		fl.fail(client, start.Add(time.Duration(i)*time.Second))
	}
	if wait := fl.blocked(client, start.Add(30*time.Second)); wait != 30*time.Second {
		t.Errorf("blocked 30 s after the first failure for %v, want 30s more", wait)
	}
	if wait := fl.blocked(client, start.Add(failureWindow)); wait != 0 {
		t.Errorf("blocked a minute after the first failure for %v, want not", wait)
	}
}
