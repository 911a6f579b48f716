package readapi

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	bodyRateLimited = `{"error":"Rate limit exceeded"}`
	// specPolicies is the RateLimit-Policy of every API answer with the specification's quotas.
	specPolicies = `"ip";q=500;w=3600, "key";q=120;w=3600`
)

// serveFrom serves a request whose connection comes from remote ("ip:port").
func serveFrom(tb testing.TB, h http.Handler, remote, method, target string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = remote
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// tooMany is the answer to a refused request: the spec's body, Retry-After, and the state of the
// policy that refused it.
func tooMany(retryAfter, rateLimit string) answer {
	return answer{status: http.StatusTooManyRequests, body: bodyRateLimited, header: map[string]string{
		"Retry-After": retryAfter, "RateLimit": rateLimit, "Etag": "", "Content-Revision": "",
	}}
}

func withETag(key, tag string) http.Header {
	return http.Header{"X-Api-Key": {key}, "If-None-Match": {tag}}
}

func TestKeyQuota(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newTestServer(t, fixtureSource(t), Config{Now: clock.Now}).Handler()
	target := "/api/v1/establishments/" + alice
	get := func() *httptest.ResponseRecorder { return serve(t, h, http.MethodGet, target, withKey(keyAlice)) }

	spend := func(n int) {
		t.Helper()
		for i := 1; i <= n; i++ {
			w := get()
			if w.Code != http.StatusOK {
				t.Fatalf("request %d: got %d, want 200", i, w.Code)
			}
			if got, want := w.Header().Get("RateLimit"), fmt.Sprintf(`"key";r=%d;t=30`, n-i); got != want {
				t.Fatalf("request %d: RateLimit got %q, want %q", i, got, want)
			}
		}
	}

	// The whole quota at once, then the 121st within the hour is refused.
	spend(120)
	want := tooMany("30", `"key";r=0;t=30`)
	checkAnswer(t, get(), http.MethodGet, want)
	checkAnswer(t, get(), http.MethodGet, want) // a refused request costs nothing

	// One request comes back every 30 s, not before.
	clock.Advance(29 * time.Second)
	checkAnswer(t, get(), http.MethodGet, tooMany("1", `"key";r=0;t=1`))
	clock.Advance(time.Second)
	spend(1)
	checkAnswer(t, get(), http.MethodGet, tooMany("30", `"key";r=0;t=30`))

	// After a full hour the whole quota is back, and no more.
	clock.Advance(time.Hour)
	spend(120)
	checkAnswer(t, get(), http.MethodGet, tooMany("30", `"key";r=0;t=30`))

	// The key is the client: another address with the same key is refused too.
	w := serveFrom(t, h, "198.51.100.7:4711", http.MethodGet, target, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, tooMany("30", `"key";r=0;t=30`))
}

// ipFixture returns a source of n active establishments with their API on, ip-0 to ip-<n-1>,
// whose keys are "ak_ip-<i>".
func ipFixture(tb testing.TB, n int) fakeSource {
	tb.Helper()
	src := fakeSource{}
	for i := range n {
		slug := fmt.Sprintf("ip-%d", i)
		src[slug] = mustEntry(tb, testBundle(slug, 7))
	}
	return src
}

func TestIPQuota(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, ipFixture(t, 5), Config{Now: newFakeClock().Now}).Handler()
	get := func(remote string, i int) *httptest.ResponseRecorder {
		slug := fmt.Sprintf("ip-%d", i)
		return serveFrom(t, h, remote, http.MethodGet, "/api/v1/establishments/"+slug, withKey("ak_"+slug))
	}
	const client = "192.0.2.10:50000"

	// Five keys from one address: the address runs out at 500, before any key does.
	for n := 1; n <= 500; n++ {
		w := get(client, n%5)
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", n, w.Code)
		}
		if n == 500 {
			if got, want := w.Header().Get("RateLimit"), `"ip";r=0;t=8`; got != want {
				t.Errorf("request 500: RateLimit got %q, want %q", got, want)
			}
		}
	}
	// 3600 s / 500 = 7.2 s, announced as 8.
	checkAnswer(t, get(client, 0), http.MethodGet, tooMany("8", `"ip";r=0;t=8`))

	// The refused request did not reach the key: ip-0 spent 100, 20 are left from anywhere.
	for n := 1; n <= 20; n++ {
		if w := get("198.51.100.1:1", 0); w.Code != http.StatusOK {
			t.Fatalf("ip-0 from another address, request %d: got %d, want 200", n, w.Code)
		}
	}
	checkAnswer(t, get("198.51.100.1:1", 0), http.MethodGet, tooMany("30", `"key";r=0;t=30`))
}

func TestNotModifiedSparesKeyQuota(t *testing.T) {
	t.Parallel()
	target := "/api/v1/establishments/" + alice
	tag := etag(alice, "establishment")

	t.Run("spent key", func(t *testing.T) {
		t.Parallel()
		h := newTestServer(t, fixtureSource(t), Config{Now: newFakeClock().Now}).Handler()
		for i := range 120 {
			if w := serve(t, h, http.MethodGet, target, withKey(keyAlice)); w.Code != http.StatusOK {
				t.Fatalf("request %d: got %d, want 200", i+1, w.Code)
			}
		}
		// Revalidation still works once the key is spent, and reports the key's state.
		for range 10 {
			w := serve(t, h, http.MethodGet, target, withETag(keyAlice, tag))
			checkAnswer(t, w, http.MethodGet, answer{status: http.StatusNotModified, header: map[string]string{
				"RateLimit": `"key";r=0;t=30`, "Retry-After": "", "Etag": tag, "Content-Revision": "7",
			}})
		}
		checkAnswer(t, serve(t, h, http.MethodGet, target, withKey(keyAlice)), http.MethodGet, tooMany("30", `"key";r=0;t=30`))
		// A conditional request that does not match is a full request, refused.
		checkAnswer(t, serve(t, h, http.MethodGet, target, withETag(keyAlice, `"stale"`)), http.MethodGet, tooMany("30", `"key";r=0;t=30`))
	})

	t.Run("counted per address", func(t *testing.T) {
		t.Parallel()
		h := newTestServer(t, fixtureSource(t), Config{IPQuota: 10, KeyQuota: 5, Now: newFakeClock().Now}).Handler()
		for i := range 10 {
			w := serve(t, h, http.MethodGet, target, withETag(keyAlice, tag))
			if w.Code != http.StatusNotModified {
				t.Fatalf("request %d: got %d, want 304", i+1, w.Code)
			}
		}
		checkAnswer(t, serve(t, h, http.MethodGet, target, withETag(keyAlice, tag)), http.MethodGet, tooMany("360", `"ip";r=0;t=360`))
		// None of the 304s spent the key.
		w := serveFrom(t, h, "198.51.100.1:1", http.MethodGet, target, withKey(keyAlice))
		checkAnswer(t, w, http.MethodGet, answer{status: http.StatusOK, body: body(alice, "establishment"),
			header: map[string]string{"RateLimit": `"key";r=4;t=720`}})
	})
}

func TestInvalidKeysCountAgainstIP(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, fixtureSource(t), Config{Now: newFakeClock().Now}).Handler()
	target := "/api/v1/establishments/" + alice

	// A guessing loop gets 500 answers per hour, whatever it sends.
	for i := range 500 {
		var header http.Header
		switch i % 3 {
		case 0:
			header = withKey(fmt.Sprintf("ak_guess_%d", i))
		case 1:
			header = withKey(keyBob)
		}
		w := serve(t, h, http.MethodGet, target, header)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: got %d, want 401", i+1, w.Code)
		}
		if got, want := w.Header().Get("RateLimit"), fmt.Sprintf(`"ip";r=%d;t=8`, 499-i); got != want {
			t.Fatalf("guess %d: RateLimit got %q, want %q", i+1, got, want)
		}
	}
	// Then the address is refused, the right key included, before the key is looked at.
	checkAnswer(t, serve(t, h, http.MethodGet, target, withKey("ak_guess")), http.MethodGet, tooMany("8", `"ip";r=0;t=8`))
	checkAnswer(t, serve(t, h, http.MethodGet, target, withKey(keyAlice)), http.MethodGet, tooMany("8", `"ip";r=0;t=8`))
	checkAnswer(t, serve(t, h, http.MethodGet, target, nil), http.MethodGet, tooMany("8", `"ip";r=0;t=8`))

	// The guesses spent nothing of the key they aimed at: its holder has all of it.
	w := serveFrom(t, h, "198.51.100.1:1", http.MethodGet, target, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, answer{status: http.StatusOK, body: body(alice, "establishment"),
		header: map[string]string{"RateLimit": `"key";r=119;t=30`}})

	// Unknown slugs and paths under /api/ count too.
	h = newTestServer(t, fixtureSource(t), Config{IPQuota: 2, Now: newFakeClock().Now}).Handler()
	serve(t, h, http.MethodGet, "/api/v1/establishments/nobody", withKey(keyAlice))
	serve(t, h, http.MethodGet, "/api/v2/anything", nil)
	checkAnswer(t, serve(t, h, http.MethodGet, target, withKey(keyAlice)), http.MethodGet, tooMany("1800", `"ip";r=0;t=1800`))
}

func TestRedirectQuota(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, fixtureSource(t), Config{RedirectQuota: 3, Now: newFakeClock().Now}).Handler()
	target := "/r/menus?establishment=" + alice + "&menu_type=lunch"
	for i := range 3 {
		w := serve(t, h, http.MethodGet, target, nil)
		checkAnswer(t, w, http.MethodGet, found(fileURL(alice, "lunch-fr-1.png")))
		for _, name := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
			if got := w.Header().Get(name); got != "" {
				t.Errorf("redirect %d: %s got %q, want none on a 302", i+1, name, got)
			}
		}
	}
	want := tooMany("1200", `"redirect";r=0;t=1200`)
	want.header["RateLimit-Policy"] = `"redirect";q=3;w=3600`
	checkAnswer(t, serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil), http.MethodGet, want)

	// The API quotas are apart.
	w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, answer{status: http.StatusOK, body: body(alice, "establishment"),
		header: map[string]string{"RateLimit": `"key";r=119;t=30`}})
}

var rateLimitPattern = regexp.MustCompile(`^"(ip|key)";r=[0-9]+;t=[1-9][0-9]*$`)

// TestQuotaHeaders checks which answers carry the quota fields.
func TestQuotaHeaders(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, fixtureSource(t), Config{Now: newFakeClock().Now}).Handler()
	spent := newTestServer(t, fixtureSource(t), Config{IPQuota: 1, Now: newFakeClock().Now}).Handler()
	serve(t, spent, http.MethodGet, "/healthz", nil) // not counted
	serve(t, spent, http.MethodGet, "/api/v1/establishments/"+alice, withKey(keyAlice))
	const est = "/api/v1/establishments/" + alice

	tests := []struct {
		name      string
		h         http.Handler
		method    string
		target    string
		header    http.Header
		status    int
		quota     bool // RateLimit-Policy and RateLimit present
		cacheCtrl string
	}{
		{"200", h, http.MethodGet, est, withKey(keyAlice), 200, true, "private, no-cache"},
		{"200 head", h, http.MethodHead, est + "/hours", withKey(keyAlice), 200, true, "private, no-cache"},
		{"304", h, http.MethodGet, est, withETag(keyAlice, "*"), 304, true, "private, no-cache"},
		{"401 no key", h, http.MethodGet, est, nil, 401, true, "no-store"},
		{"401 wrong key", h, http.MethodGet, est, withKey(keyBob), 401, true, "no-store"},
		{"404 unknown slug", h, http.MethodGet, "/api/v1/establishments/nobody", withKey(keyAlice), 404, true, "no-store"},
		{"404 draft", h, http.MethodGet, "/api/v1/establishments/" + dan, withKey(keyDan), 404, true, "no-store"},
		{"404 menu type", h, http.MethodGet, est + "/menus/brunch", withKey(keyAlice), 404, true, "no-store"},
		{"404 unknown API path", h, http.MethodGet, "/api/v1/nothing", nil, 404, true, "no-store"},
		{"405 API", h, http.MethodPost, est, withKey(keyAlice), 405, true, "no-store"},
		{"429", spent, http.MethodGet, est, withKey(keyAlice), 429, true, "no-store"},
		{"302", h, http.MethodGet, "/r/master_menu?establishment=" + alice, nil, 302, false, ""},
		{"404 redirect", h, http.MethodGet, "/r/master_menu?establishment=nobody", nil, 404, false, "no-store"},
		{"404 outside the API", h, http.MethodGet, "/nothing", nil, 404, false, "no-store"},
		{"healthz", spent, http.MethodGet, "/healthz", nil, 200, false, "no-store"},
		{"readyz", spent, http.MethodGet, "/readyz", nil, 200, false, "no-store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(t, tt.h, tt.method, tt.target, tt.header)
			if w.Code != tt.status {
				t.Fatalf("status: got %d, want %d", w.Code, tt.status)
			}
			policy, limit := w.Header().Get("RateLimit-Policy"), w.Header().Get("RateLimit")
			if tt.quota {
				want := specPolicies
				if tt.status == http.StatusTooManyRequests {
					want = `"ip";q=1;w=3600, "key";q=120;w=3600` // the spent server's
				}
				if policy != want {
					t.Errorf("RateLimit-Policy: got %q, want %q", policy, want)
				}
				if !rateLimitPattern.MatchString(limit) {
					t.Errorf("RateLimit: got %q, want a match of %s", limit, rateLimitPattern)
				}
			} else if policy != "" || limit != "" {
				t.Errorf("quota fields: got %q and %q, want none", policy, limit)
			}
			if got, want := w.Header().Get("Retry-After") != "", tt.status == 429; got != want {
				t.Errorf("Retry-After present: got %v, want %v", got, want)
			}
			if got := w.Header().Get("Cache-Control"); got != tt.cacheCtrl {
				t.Errorf("Cache-Control: got %q, want %q", got, tt.cacheCtrl)
			}
		})
	}
}

func TestQuotasOff(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, fixtureSource(t), Config{KeyQuota: -1, IPQuota: -1, RedirectQuota: -1, Now: newFakeClock().Now}).Handler()
	for i := range 1000 {
		for _, target := range []string{"/api/v1/establishments/" + alice, "/r/master_menu?establishment=" + alice} {
			w := serve(t, h, http.MethodGet, target, withKey(keyAlice))
			if w.Code != http.StatusOK && w.Code != http.StatusFound {
				t.Fatalf("request %d of %s: got %d", i+1, target, w.Code)
			}
			if got := w.Header().Get("RateLimit") + w.Header().Get("RateLimit-Policy"); got != "" {
				t.Fatalf("quota fields: got %q, want none", got)
			}
		}
	}
}

// TestOneQuotaOff checks that each API quota works without the other.
func TestOneQuotaOff(t *testing.T) {
	t.Parallel()
	target := "/api/v1/establishments/" + alice
	keyOnly := newTestServer(t, fixtureSource(t), Config{IPQuota: -1, KeyQuota: 2, Now: newFakeClock().Now}).Handler()
	serve(t, keyOnly, http.MethodGet, target, withKey(keyAlice))
	w := serve(t, keyOnly, http.MethodGet, target, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, answer{status: 200, body: body(alice, "establishment"), header: map[string]string{
		"RateLimit-Policy": `"key";q=2;w=3600`, "RateLimit": `"key";r=0;t=1800`}})
	checkAnswer(t, serve(t, keyOnly, http.MethodGet, target, withKey(keyAlice)), http.MethodGet, tooMany("1800", `"key";r=0;t=1800`))
	// Without a per-IP quota, an answer before the key check has a policy but no state.
	w = serve(t, keyOnly, http.MethodGet, target, nil)
	checkAnswer(t, w, http.MethodGet, answer{status: 401, body: bodyUnauthorized, header: map[string]string{
		"RateLimit-Policy": `"key";q=2;w=3600`, "RateLimit": ""}})

	ipOnly := newTestServer(t, fixtureSource(t), Config{IPQuota: 2, KeyQuota: -1, Now: newFakeClock().Now}).Handler()
	w = serve(t, ipOnly, http.MethodGet, target, withKey(keyAlice))
	checkAnswer(t, w, http.MethodGet, answer{status: 200, body: body(alice, "establishment"), header: map[string]string{
		"RateLimit-Policy": `"ip";q=2;w=3600`, "RateLimit": `"ip";r=1;t=1800`}})
}

func TestTrustedProxyQuota(t *testing.T) {
	t.Parallel()
	cfg := Config{IPQuota: 2, Now: newFakeClock().Now, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	h := newTestServer(t, fixtureSource(t), cfg).Handler()
	target := "/api/v1/establishments/" + alice
	via := func(remote, forwardedFor string) int {
		header := withKey(keyAlice)
		if forwardedFor != "" {
			header["X-Forwarded-For"] = []string{forwardedFor}
		}
		return serveFrom(t, h, remote, http.MethodGet, target, header).Code
	}

	// Behind the proxy, each client has its own quota.
	for _, client := range []string{"203.0.113.1", "203.0.113.2"} {
		for i := range 2 {
			if got := via("10.0.0.1:4000", "198.51.100.99, "+client); got != 200 {
				t.Fatalf("%s request %d: got %d, want 200", client, i+1, got)
			}
		}
		if got := via("10.1.2.3:4000", client+", 10.0.0.2"); got != 429 {
			t.Errorf("%s third request: got %d, want 429", client, got)
		}
	}
	// An untrusted peer is the client, whatever it claims.
	for i, claim := range []string{"203.0.113.50", "203.0.113.51"} {
		if got := via("192.0.2.77:1", claim); got != 200 {
			t.Fatalf("untrusted peer request %d: got %d, want 200", i+1, got)
		}
	}
	if got := via("192.0.2.77:1", "203.0.113.52"); got != 429 {
		t.Errorf("untrusted peer third request: got %d, want 429", got)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, fakeSource{}, Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
	}})
	untrusting := newTestServer(t, fakeSource{}, Config{})
	tests := []struct {
		name   string
		s      *Server
		remote string
		xff    []string
		want   string // "" for the zero Addr
	}{
		{"peer", s, "192.0.2.1:1234", nil, "192.0.2.1"},
		{"untrusted peer ignores the header", s, "192.0.2.1:1234", []string{"203.0.113.9"}, "192.0.2.1"},
		{"no trusted proxies", untrusting, "10.0.0.1:1234", []string{"203.0.113.9"}, "10.0.0.1"},
		{"trusted peer", s, "10.0.0.1:1234", []string{"203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted hop", s, "10.0.0.1:1234", []string{"1.1.1.1, 203.0.113.9, 10.0.0.2"}, "203.0.113.9"},
		{"repeated fields are one list", s, "10.0.0.1:1234", []string{"1.1.1.1, 203.0.113.9", "10.0.0.2"}, "203.0.113.9"},
		{"every hop trusted", s, "10.0.0.1:1234", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"trusted peer without header", s, "10.0.0.1:1234", nil, "10.0.0.1"},
		{"empty header", s, "10.0.0.1:1234", []string{""}, "10.0.0.1"},
		{"empty elements", s, "10.0.0.1:1234", []string{" , ,203.0.113.9,, "}, "203.0.113.9"},
		{"garbage nearest", s, "10.0.0.1:1234", []string{"203.0.113.9, garbage"}, "10.0.0.1"},
		{"garbage after a trusted hop", s, "10.0.0.1:1234", []string{"garbage, 10.0.0.2"}, "10.0.0.2"},
		{"garbage left of the client", s, "10.0.0.1:1234", []string{"garbage, 203.0.113.9"}, "203.0.113.9"},
		{"unknown token", s, "10.0.0.1:1234", []string{"unknown"}, "10.0.0.1"},
		{"hop with port", s, "10.0.0.1:1234", []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"IPv6 hop with port", s, "10.0.0.1:1234", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"IPv6 hop", s, "[fd00::1]:80", []string{"2001:db8::5"}, "2001:db8::5"},
		{"IPv4-mapped peer", s, "[::ffff:10.0.0.1]:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"IPv4-mapped hop", s, "10.0.0.1:80", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"zone dropped", s, "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"peer without port", s, "192.0.2.1", nil, "192.0.2.1"},
		{"unreadable peer", s, "@", []string{"203.0.113.9"}, ""},
		{"empty peer", s, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			if tt.xff != nil {
				r.Header["X-Forwarded-For"] = tt.xff
			}
			got := tt.s.clientIP(r)
			if tt.want == "" {
				if got.IsValid() {
					t.Errorf("clientIP: got %v, want the zero Addr", got)
				}
				return
			}
			if want := netip.MustParseAddr(tt.want); got != want {
				t.Errorf("clientIP: got %v, want %v", got, want)
			}
		})
	}
}

func TestIPKey(t *testing.T) {
	t.Parallel()
	key := func(s string) clientKey { return ipKey(plainAddr(netip.MustParseAddr(s))) }
	same := [][2]string{
		{"192.0.2.1", "::ffff:192.0.2.1"},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"2001:db8:1:2::1", "2001:db8:1:2::1%eth0"},
	}
	for _, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Errorf("ipKey(%s) != ipKey(%s), want one client", p[0], p[1])
		}
	}
	distinct := []string{"192.0.2.1", "192.0.2.2", "0.0.0.0", "2001:db8:1:2::1", "2001:db8:1:3::1", "::1"}
	seen := map[clientKey]string{unknownClient: "unknown"}
	for _, s := range distinct {
		k := key(s)
		if prev, ok := seen[k]; ok {
			t.Errorf("ipKey(%s) == key of %s, want distinct clients", s, prev)
		}
		seen[k] = s
	}
	if got := ipKey(netip.Addr{}); got != unknownClient {
		t.Errorf("ipKey of the zero Addr: got %x, want the unknown client", got)
	}
}

// TestLimiterRefill pins the GCRA arithmetic: the burst, the state reported, the refill.
func TestLimiterRefill(t *testing.T) {
	t.Parallel()
	const sec = int64(time.Second)
	l := newLimiter(120, 3600*sec, 1000)
	k := clientKey{1}
	if got, want := l.peek(k, 0), (decision{allowed: true, remaining: 120, reset: 30 * sec}); got != want {
		t.Errorf("peek of a new client: got %+v, want %+v", got, want)
	}
	for i := range 120 {
		want := decision{allowed: true, remaining: int64(119 - i), reset: 30 * sec}
		if got := l.take(k, 0); got != want {
			t.Fatalf("take %d: got %+v, want %+v", i+1, got, want)
		}
	}
	steps := []struct {
		at   int64
		want decision
	}{
		{0, decision{reset: 30 * sec}},
		{10 * sec, decision{reset: 20 * sec}},
		{30*sec - 1, decision{reset: 1}},
		{30 * sec, decision{allowed: true, remaining: 0, reset: 30 * sec}},
		{30 * sec, decision{reset: 30 * sec}},
		{75 * sec, decision{allowed: true, remaining: 0, reset: 15 * sec}}, // 1.5 intervals later
		{90 * sec, decision{allowed: true, remaining: 0, reset: 30 * sec}},
		{90 * sec, decision{reset: 30 * sec}},
	}
	for _, s := range steps {
		if got := l.take(k, s.at); got != s.want {
			t.Fatalf("take at %v: got %+v, want %+v", time.Duration(s.at), got, s.want)
		}
	}
	// An hour after the last request the client is back to a full quota, equal to a new one.
	if got, want := l.peek(k, 90*sec+3600*sec), l.peek(clientKey{2}, 0); got != want {
		t.Errorf("peek an hour later: got %+v, want %+v", got, want)
	}
	// A peek counts nothing.
	for range 5 {
		l.peek(clientKey{3}, 0)
	}
	if got := l.take(clientKey{3}, 0).remaining; got != 119 {
		t.Errorf("remaining after peeks and one take: got %d, want 119", got)
	}
}

// TestLimiterConformance drives the limiter with random arrivals and compares every decision
// with the definition of the window: a request at t is admitted exactly when, for every admitted
// request i before it (and the new one itself), the admitted requests from i to t number at most
// quota plus the whole intervals elapsed since i. So a client may spend its whole quota at once,
// then gets one request back every window/quota.
func TestLimiterConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		quota, window int64
	}{{120, 3600e9}, {500, 3600e9}, {7, 3600e9}, {3, 10e9}, {1, 60e9}} {
		t.Run(fmt.Sprintf("%d per %v", tc.quota, time.Duration(tc.window)), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(tc.quota), uint64(tc.window)))
			l := newLimiter(tc.quota, tc.window, 16)
			interval := tc.window / tc.quota
			var admitted []int64
			now := int64(0)
			for range 3000 {
				// Bursts and pauses, around the sustainable rate.
				switch rng.IntN(4) {
				case 0:
				case 1, 2:
					now += rng.Int64N(interval)
				default:
					now += rng.Int64N(3 * tc.window)
				}
				want := true
				for i := len(admitted) - 1; i >= 0; i-- {
					count := int64(len(admitted) - i + 1)
					if (count-1)*interval > tc.window-interval+now-admitted[i] {
						want = false
						break
					}
				}
				got := l.take(clientKey{9}, now)
				if got.allowed != want {
					t.Fatalf("at %v after %d admitted: got allowed %v, want %v", time.Duration(now), len(admitted), got.allowed, want)
				}
				if got.allowed {
					admitted = append(admitted, now)
				}
			}
			if len(admitted) < 100 {
				t.Fatalf("only %d requests admitted: the sequence tests too little", len(admitted))
			}
		})
	}
}

// TestLimiterMemoryBound adds a million distinct addresses: the table never grows past its
// capacity, at one instant (nothing expires, clients are forgotten) or over time (expired
// clients are swept as new ones come).
func TestLimiterMemoryBound(t *testing.T) {
	t.Parallel()
	const clients = 1_000_000
	addr := func(i int) clientKey {
		return ipKey(netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}))
	}

	t.Run("one instant", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(defaultIPQuota, int64(defaultWindow), defaultMaxClients)
		for i := range clients {
			if d := l.take(addr(i), 0); !d.allowed {
				t.Fatalf("client %d: refused, want a new client admitted", i)
			}
			if i%100_000 == 0 {
				if n := l.size(); n > l.capacity() {
					t.Fatalf("after %d clients: %d entries, want at most %d", i+1, n, l.capacity())
				}
			}
		}
		if n, c := l.size(), l.capacity(); n > c || c > defaultMaxClients+limiterShards {
			t.Errorf("entries: got %d (capacity %d), want at most %d", n, c, defaultMaxClients)
		}
		if got := l.evicted.Load(); got < clients-uint64(l.capacity()) {
			t.Errorf("forgotten clients: got %d, want at least %d", got, clients-l.capacity())
		}
	})

	t.Run("over time", func(t *testing.T) {
		t.Parallel()
		// One new client every 10 ms; each expires 7.2 s after its request: 720 are live.
		l := newLimiter(defaultIPQuota, int64(defaultWindow), defaultMaxClients)
		const step = 10 * int64(time.Millisecond)
		live := int(int64(defaultWindow) / defaultIPQuota / step)
		most := 0
		for i := range clients {
			l.take(addr(i), int64(i)*step)
			if i%1000 == 0 {
				most = max(most, l.size())
			}
		}
		t.Logf("entries: at most %d for %d live clients", most, live)
		if most > 4*live {
			t.Errorf("entries: got up to %d, want at most %d (4 times the %d live clients)", most, 4*live, live)
		}
		if got := l.evicted.Load(); got != 0 {
			t.Errorf("forgotten clients: got %d, want 0 below capacity", got)
		}
	})
}

// TestLimiterKeepsBusyClients checks whom a full table forgets: a client that spent its quota
// stays while a flood of new clients, each with one request, passes through.
func TestLimiterKeepsBusyClients(t *testing.T) {
	t.Parallel()
	l := newLimiter(defaultIPQuota, int64(defaultWindow), 1024)
	busy := clientKey{0xb}
	for range defaultIPQuota {
		l.take(busy, 0)
	}
	for i := range 100_000 {
		l.take(clientKey{byte(i), byte(i >> 8), byte(i >> 16), 1}, 0)
	}
	if d := l.take(busy, 0); d.allowed {
		t.Errorf("busy client after the flood: admitted, want refused (its state kept)")
	}
}

func TestForgottenClientsAreReported(t *testing.T) {
	t.Parallel()
	logger, logs := newTestLogger()
	clock := newFakeClock()
	h := newTestServer(t, fixtureSource(t), Config{Logger: logger, Now: clock.Now, MaxClients: limiterShards}).Handler()
	flood := func(from int) {
		for i := range 1000 {
			remote := fmt.Sprintf("198.51.%d.%d:1", (from+i)>>8&0xff, (from+i)&0xff)
			serveFrom(t, h, remote, http.MethodGet, "/api/v1/establishments/nobody", nil)
		}
	}
	flood(0)
	if got := strings.Count(logs.String(), "quota table full"); got != 1 {
		t.Fatalf("warnings after a flood: got %d, want 1\n%s", got, logs)
	}
	clock.Advance(evictionReportEvery)
	flood(1000)
	if got := strings.Count(logs.String(), "quota table full"); got != 2 {
		t.Fatalf("warnings a minute later: got %d, want 2\n%s", got, logs)
	}
	if !strings.Contains(logs.String(), "quota=ip") {
		t.Errorf("warning: got %q, want the quota named", logs)
	}
}

func TestRateLimitFields(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	tests := []struct {
		quota      int
		window     time.Duration
		d          decision
		rateLimit  string
		retryAfter string
	}{
		{120, time.Hour, decision{remaining: 119, reset: 30 * sec}, `"key";r=119;t=30`, "30"},
		{120, time.Hour, decision{remaining: 0, reset: 1}, `"key";r=0;t=1`, "1"},
		{120, time.Hour, decision{remaining: 120, reset: 30 * sec}, `"key";r=120;t=30`, "30"},
		{120, time.Hour, decision{remaining: 5, reset: 29*sec + 1}, `"key";r=5;t=30`, "30"},
		// A quota larger than the table reports what fits.
		{1 << 40, time.Hour, decision{remaining: 1<<40 - 1, reset: 3}, `"key";r=131071;t=1`, "1"},
		{1 << 40, time.Hour, decision{remaining: 5, reset: 3}, `"key";r=5;t=1`, "1"},
		{80000, 24 * time.Hour, decision{remaining: 79999, reset: 2 * sec}, `"key";r=65535;t=2`, "2"},
		{100000, 24 * time.Hour, decision{remaining: 99999, reset: sec}, `"key";r=99999;t=1`, "1"},
		// An interval past 36 hours has no table: formatted on the spot.
		{1, 100000 * time.Hour, decision{remaining: 0, reset: 100000 * 3600 * sec}, `"key";r=0;t=360000000`, "360000000"},
		{1, 100000 * time.Hour, decision{remaining: 1, reset: 3 * sec}, `"key";r=1;t=3`, "3"},
		// A clock set back gives resets past the interval.
		{120, time.Hour, decision{remaining: 0, reset: 100 * sec}, `"key";r=0;t=100`, "100"},
	}
	for _, tt := range tests {
		p := newPolicy("key", tt.quota, tt.window, 16)
		for range 2 { // built, then from the table
			if got := p.rateLimitField(tt.d); !cmp.Equal(got, []string{tt.rateLimit}) {
				t.Errorf("rateLimitField(%+v) of %d per %v: got %q, want %q", tt.d, tt.quota, tt.window, got, tt.rateLimit)
			}
			if got := p.retryAfterField(tt.d); !cmp.Equal(got, []string{tt.retryAfter}) {
				t.Errorf("retryAfterField(%+v) of %d per %v: got %q, want %q", tt.d, tt.quota, tt.window, got, tt.retryAfter)
			}
		}
	}
	if p := newPolicy("key", -1, time.Hour, 16); p != nil {
		t.Errorf("newPolicy of a negative quota: got %+v, want nil (off)", p)
	}
}

func TestConfigValidateQuotas(t *testing.T) {
	t.Parallel()
	bad := netip.Prefix{}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{}},
		{name: "custom", cfg: Config{KeyQuota: 10, IPQuota: 20, RedirectQuota: -1, Window: time.Minute, MaxClients: 10,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}},
		{name: "all off", cfg: Config{KeyQuota: -1, IPQuota: -1, RedirectQuota: -1}},
		{name: "negative window", cfg: Config{Window: -time.Second}, wantErr: "negative"},
		{name: "fractional window", cfg: Config{Window: 1500 * time.Millisecond}, wantErr: "whole number of seconds"},
		{name: "quota above one per nanosecond", cfg: Config{Window: time.Second, IPQuota: 2e9}, wantErr: "ip quota"},
		{name: "negative max clients", cfg: Config{MaxClients: -1}, wantErr: "max clients"},
		{name: "invalid prefix", cfg: Config{TrustedProxies: []netip.Prefix{bad}}, wantErr: "trusted proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Logger = discardLogger()
			m := &Mirror{ready: make(chan struct{})}
			tt.cfg.Mirror = m
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: got %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate: got %v, want an error about %q", err, tt.wantErr)
			}
			if err == nil {
				if _, err := New(tt.cfg); err != nil {
					t.Errorf("New: got %v, want nil", err)
				}
			}
		})
	}
}
