package admin

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// bubbleHandler is the admin API's handler made inside a synctest bubble, so that its penalties
// run on the bubble's fake clock. Its routes are only sent GET /admin/v1/status, which no command
// serves.
func bubbleHandler(t *testing.T) http.Handler {
	t.Helper()
	api, err := NewAPI(Config{Commands: &app.Commands{}, Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return api.Handler()
}

// answer is a status and how long, on the bubble's clock, it took to come.
type answer struct {
	status int
	after  time.Duration
}

// authenticateFrom sends GET /admin/v1/status from addr with token ("" for none) and returns the
// answer; ctx is the request's.
func authenticateFrom(ctx context.Context, h http.Handler, addr, token string) answer {
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/admin/v1/status", nil)
	req.RemoteAddr = addr
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(w, req)
	return answer{w.Code, time.Since(start)}
}

const wrongToken = "wrong-token-0123456789"

// TestRightTokenIsNeverRefused: however many wrong tokens an address sent, and while some of them
// still wait for their answer, the right token from that address is served at once.
func TestRightTokenIsNeverRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := bubbleHandler(t)
		ctx := t.Context()
		for range 10 {
			authenticateFrom(ctx, h, "192.0.2.1:1000", wrongToken)
		}
		if got := authenticateFrom(ctx, h, "192.0.2.1:2000", testToken); got != (answer{http.StatusOK, 0}) {
			t.Errorf("right token after ten wrong ones: got %d after %v, want 200 at once", got.status, got.after)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { authenticateFrom(ctx, h, "192.0.2.1:3000", "") })
		}
		synctest.Wait()
		if got := authenticateFrom(ctx, h, "192.0.2.1:4000", testToken); got != (answer{http.StatusOK, 0}) {
			t.Errorf("right token while three missing ones wait: got %d after %v, want 200 at once", got.status, got.after)
		}
		wg.Wait()
	})
}

// TestWrongTokensWaitTheirPenalty: an address's first freeFailures wrong tokens within a minute are
// answered at once; each later one is answered 401 only after a penalty that doubles up to
// maxPenalty; a minute after the first failure, the count starts again.
func TestWrongTokensWaitTheirPenalty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := bubbleHandler(t)
		start := time.Now()
		want := []time.Duration{0, 0, 0, 0, 0, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
		for i, after := range want {
			got := authenticateFrom(t.Context(), h, "192.0.2.1:1000", wrongToken)
			if got != (answer{http.StatusUnauthorized, after}) {
				t.Errorf("wrong token %d: got %d after %v, want 401 after %v", i+1, got.status, got.after, after)
			}
		}
		time.Sleep(start.Add(failureWindow).Sub(time.Now()))
		if got := authenticateFrom(t.Context(), h, "192.0.2.1:1000", wrongToken); got != (answer{http.StatusUnauthorized, 0}) {
			t.Errorf("wrong token a minute after the first: got %d after %v, want 401 at once", got.status, got.after)
		}
	})
}

// TestConcurrentWrongTokensWaitToo: wrong tokens sent at once past the free ones are each answered
// no sooner than the penalty, up to maxWaiting of them: one more is answered 429 at once, so that
// an address's waiting requests cannot hold every connection it may have. One whose client gives
// up stops waiting, and leaves its place.
func TestConcurrentWrongTokensWaitToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := bubbleHandler(t)
		for range freeFailures {
			authenticateFrom(t.Context(), h, "192.0.2.1:1000", wrongToken)
		}
		const n = maxWaiting - 1
		answers := make(chan answer, n+1)
		for range n {
			go func() { answers <- authenticateFrom(t.Context(), h, "192.0.2.1:2000", wrongToken) }()
		}
		ctx, cancel := context.WithCancel(t.Context())
		gaveUp := make(chan answer, 1)
		go func() { gaveUp <- authenticateFrom(ctx, h, "192.0.2.1:3000", wrongToken) }()
		synctest.Wait()
		if got := authenticateFrom(t.Context(), h, "192.0.2.1:4000", wrongToken); got != (answer{http.StatusTooManyRequests, 0}) {
			t.Errorf("one more than maxWaiting: got %d after %v, want 429 at once", got.status, got.after)
		}
		time.Sleep(firstPenalty - time.Millisecond)
		synctest.Wait()
		if got := len(answers); got != 0 {
			t.Errorf("before the first penalty ended: got %d answers, want none", got)
		}
		cancel()
		synctest.Wait()
		if len(gaveUp) != 1 {
			t.Error("a request whose client gave up still waits")
		}
		go func() { answers <- authenticateFrom(t.Context(), h, "192.0.2.1:5000", wrongToken) }()
		for range n + 1 {
			if got := <-answers; got.status != http.StatusUnauthorized || got.after < firstPenalty || got.after > maxPenalty {
				t.Errorf("got %d after %v, want 401 after %v to %v", got.status, got.after, firstPenalty, maxPenalty)
			}
		}
	})
}

// TestPenaltiesArePerAddress: the failures of one address delay another's only when both are the
// same client: one IPv4 address, one IPv6 /64, or this machine (every loopback address).
func TestPenaltiesArePerAddress(t *testing.T) {
	cases := []struct {
		name          string
		failing, then string
		shared        bool
	}{
		{"the same IPv4 address", "192.0.2.1:1000", "192.0.2.1:2000", true},
		{"another IPv4 address", "192.0.2.1:1000", "192.0.2.2:1000", false},
		{"an IPv4-mapped IPv6 address", "[::ffff:192.0.2.1]:1000", "192.0.2.1:2000", true},
		{"the same IPv6 /64", "[2001:db8:1:2::1]:1000", "[2001:db8:1:2::ffff]:1000", true},
		{"another IPv6 /64", "[2001:db8:1:2::1]:1000", "[2001:db8:1:3::1]:1000", false},
		{"another IPv4 loopback address", "127.0.0.1:1000", "127.0.0.2:1000", true},
		{"the IPv6 loopback address", "127.0.0.1:1000", "[::1]:1000", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := bubbleHandler(t)
				for range freeFailures {
					authenticateFrom(t.Context(), h, c.failing, wrongToken)
				}
				want := answer{http.StatusUnauthorized, 0}
				if c.shared {
					want.after = firstPenalty
				}
				if got := authenticateFrom(t.Context(), h, c.then, wrongToken); got != want {
					t.Errorf("wrong token from %s after %d from %s: got %d after %v, want %d after %v",
						c.then, freeFailures, c.failing, got.status, got.after, want.status, want.after)
				}
			})
		})
	}
}

// TestPenalty: the wait of the n-th failure of a window.
func TestPenalty(t *testing.T) {
	cases := []struct {
		n    int
		want time.Duration
	}{
		{1, 0},
		{freeFailures, 0},
		{freeFailures + 1, firstPenalty},
		{freeFailures + 2, 2 * firstPenalty},
		{freeFailures + 3, maxPenalty},
		{1000, maxPenalty},
		{1 << 62, maxPenalty},
	}
	for _, c := range cases {
		if got := penalty(c.n); got != c.want {
			t.Errorf("penalty(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}
