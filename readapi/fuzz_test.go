package readapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// fuzzRoutes are the path shapes FuzzHandler drives; the last one takes the slug as a raw path.
var fuzzRoutes = []string{"establishment", "hours", "menus", "detail", "master_menu", "menus_redirect", "raw"}

// FuzzHandler sends arbitrary slugs, keys, locales, menu types, methods and If-None-Match values
// through the whole handler: it never panics, answers only the statuses the API defines, and
// serves a document only to the key of its establishment.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(0), alice, keyAlice, "", "", "GET", "")
	f.Add(uint8(1), alice, keyAlice, "en", "", "HEAD", "*")
	f.Add(uint8(2), alice, keyAlice, "de", "", "GET", "")
	f.Add(uint8(3), alice, keyAlice, "en", "lunch", "GET", `"x", W/"y"`)
	f.Add(uint8(3), alice, keyBob, "fr", "wine-list", "GET", "")
	f.Add(uint8(3), dan, keyDan, "", "lunch", "GET", "")
	f.Add(uint8(0), quinn, keyQuinn, "", "", "GET", "")
	f.Add(uint8(0), "..", keyAlice, "", "", "GET", "")
	f.Add(uint8(0), strings.Repeat("a", 70), "", "", "", "POST", "")
	f.Add(uint8(4), alice, "", "", "", "GET", "")
	f.Add(uint8(4), bob, "", "", "", "DELETE", "")
	f.Add(uint8(5), alice, "", "en", "wine-list", "GET", "")
	f.Add(uint8(5), quinn, "", "xx", "lunch", "OPTIONS", "")
	f.Add(uint8(6), "api/v1/establishments/"+alice+"/menus", keyAlice, "locale=en&locale", "", "GET", "")
	f.Add(uint8(6), "r/menus", "", "establishment=chez-alice&menu_type=lunch;x", "", "GET", "")

	src := fixtureSource(f)
	// Quotas on, too large to refuse anything: a 429 would hide what the input does.
	h := newTestServer(f, src, benchConfig()).Handler()
	stored := map[string]bool{}
	for _, e := range src {
		for _, d := range allDocuments(e) {
			stored[string(d.body)] = true
		}
	}
	apiKeys := map[string]string{alice: keyAlice, bob: keyBob, dan: keyDan, quinn: keyQuinn}

	f.Fuzz(func(t *testing.T, route uint8, slug, key, loc, menuType, method, inm string) {
		if method == "" {
			method = http.MethodGet
		}
		shape := fuzzRoutes[int(route)%len(fuzzRoutes)]
		est := "/api/v1/establishments/" + url.PathEscape(slug)
		query := "locale=" + url.QueryEscape(loc)
		var path string
		switch shape {
		case "establishment":
			path = est
		case "hours":
			path = est + "/hours"
		case "menus":
			path = est + "/menus"
		case "detail":
			path = est + "/menus/" + url.PathEscape(menuType)
		case "master_menu":
			path, query = "/r/master_menu", "establishment="+url.QueryEscape(slug)
		case "menus_redirect":
			path = "/r/menus"
			query = "establishment=" + url.QueryEscape(slug) + "&menu_type=" + url.QueryEscape(menuType) + "&" + query
		case "raw":
			path, query = "/"+slug, loc
		}
		u, err := url.Parse(path)
		if err != nil {
			t.Skip()
		}
		u.RawQuery = query
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Method, r.URL, r.RequestURI = method, u, ""
		r.Header["X-Api-Key"] = []string{key}
		if inm != "" {
			r.Header["If-None-Match"] = []string{inm}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		status, body := w.Code, w.Body.String()
		switch status {
		case 200, 302, 304, 401, 404, 405:
		default:
			t.Fatalf("%s %s: got status %d, want one of 200 302 304 401 404 405", method, u, status)
		}
		isAPI := strings.HasPrefix(u.Path, "/api/")
		getOrHead := method == http.MethodGet || method == http.MethodHead
		if (status == 200 || status == 302 || status == 304) && !getOrHead {
			t.Fatalf("%s %s: got %d, want 405 or 404 for that method", method, u, status)
		}
		// A document is served only to the key of the establishment the router resolved, and
		// only for an active establishment with the API enabled.
		if isAPI && (status == 200 || status == 304) {
			if routed := routedSlug(u.Path); routed != alice && routed != bob || key != apiKeys[routed] {
				t.Fatalf("%s %s with key %q: got %d, want 401 or 404", method, u, key, status)
			}
		}
		if status == 200 && method == http.MethodGet && !stored[body] {
			t.Fatalf("%s %s: got body %q, not a stored document", method, u, body)
		}
		if status == 302 && w.Header().Get("Location") == "" {
			t.Fatalf("%s %s: 302 without Location", method, u)
		}
		if status != 302 && status != 304 && w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: got Content-Type %q, want application/json", method, u, w.Header().Get("Content-Type"))
		}
	})
}

// routedSlug returns the establishment segment of an API path.
func routedSlug(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/v1/establishments/")
	if !ok {
		return ""
	}
	slug, _, _ := strings.Cut(rest, "/")
	return slug
}

func allDocuments(e *served) []*document {
	docs := []*document{&e.establishment, &e.hours, &e.menus.all, &e.menus.fr, &e.menus.en}
	for _, v := range e.menuDetails {
		docs = append(docs, &v.all, &v.fr, &v.en)
	}
	return docs
}

// FuzzQueryValue checks queryValue against url.ParseQuery on the queries it reads whole, and on
// every query that queryValue finds a key only where a pair names it.
func FuzzQueryValue(f *testing.F) {
	for _, seed := range []string{"", "locale=en", "locale", "a=1&locale=fr&locale=en", "locale=%zz&locale=en",
		"loc%61le=e%6E", "locale=a+b", "x;locale=en&locale=fr", "&&locale=&", "locale=%"} {
		f.Add(seed, "locale")
	}
	f.Fuzz(func(t *testing.T, raw, key string) {
		if strings.Count(raw, "&") >= 10000 {
			t.Skip() // url.ParseQuery's parameter limit
		}
		got, ok := queryValue(raw, key)
		values, err := url.ParseQuery(raw)
		if err == nil {
			want, wantOK := values[key]
			if ok != wantOK || ok && got != want[0] {
				t.Fatalf("queryValue(%q, %q): got %q, %v, want %q, %v", raw, key, got, ok, want, wantOK)
			}
			return
		}
		named := false
		for _, pair := range strings.Split(raw, "&") {
			if pair == "" {
				continue
			}
			k, _, _ := strings.Cut(pair, "=")
			if u, err := url.QueryUnescape(k); err == nil && u == key {
				named = true
			}
		}
		if ok != named {
			t.Fatalf("queryValue(%q, %q): present %v, but a pair names the key: %v", raw, key, ok, named)
		}
	})
}

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// FuzzValidSlug checks validSlug against slugPattern, the slug rule written as a regular expression.
func FuzzValidSlug(f *testing.F) {
	for _, seed := range []string{"", "a", "a-", "-a", "chez-alice", "..", "A", strings.Repeat("a", 64), strings.Repeat("a", 65), "a\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validSlug(s), slugPattern.MatchString(s); got != want {
			t.Fatalf("validSlug(%q): got %v, want %v", s, got, want)
		}
	})
}

// FuzzMatchesETag checks that any If-None-Match value is parsed without panic, that a list
// holding the tag matches, and that an unrelated list of valid tags does not.
func FuzzMatchesETag(f *testing.F) {
	for _, seed := range []string{"", "*", `"abc"`, `W/"abc"`, `"a", "b"`, `"unterminated`, `,,,`} {
		f.Add(seed)
	}
	const tag = `"fuzz-tag"`
	f.Fuzz(func(t *testing.T, list string) {
		got := matchesETag(list, tag)
		if !strings.Contains(list, "fuzz-tag") && !strings.Contains(list, "*") && got {
			t.Fatalf("matchesETag(%q, %q): got true for a list without the tag", list, tag)
		}
		if !matchesETag(tag+", "+list, tag) {
			t.Fatalf("matchesETag(%q): got false for a list starting with the tag", tag+", "+list)
		}
	})
}

// FuzzClientIP sends arbitrary peer addresses and X-Forwarded-For values through the client
// address resolution: it never panics; the address is the peer's unless the peer is trusted; a
// trusted peer's client is the peer or one of the header's hops.
func FuzzClientIP(f *testing.F) {
	for _, seed := range [][2]string{
		{"10.0.0.1:80", "203.0.113.9"},
		{"10.0.0.1:80", "1.1.1.1, 203.0.113.9, 10.0.0.2"},
		{"[fd00::1]:80", "2001:db8::1, [2001:db8::2]:443"},
		{"192.0.2.1:1", "10.0.0.5"},
		{"[::ffff:10.0.0.1]:80", "::ffff:203.0.113.9:80"},
		{"@", "unknown, ,,"},
		{"[fe80::1%eth0]:80", "fe80::2%lo"},
	} {
		f.Add(seed[0], seed[1])
	}
	s := newTestServer(f, fakeSource{}, Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
	}})
	f.Fuzz(func(t *testing.T, remote, forwardedFor string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header[forwardedForHeader] = []string{forwardedFor}
		got := s.clientIP(r)
		peer := peerAddr(remote)
		if got.Zone() != "" || got.Is4In6() {
			t.Fatalf("clientIP(%q, %q): got %v, want no zone and no IPv4-mapped form", remote, forwardedFor, got)
		}
		if !s.trusts(peer) {
			if got != peer {
				t.Fatalf("clientIP(%q, %q): got %v, want the untrusted peer %v", remote, forwardedFor, got, peer)
			}
		} else if got != peer {
			isHop := false
			for hop := range strings.SplitSeq(forwardedFor, ",") {
				if a, ok := parseHop(strings.TrimSpace(hop)); ok && a == got {
					isHop = true
				}
			}
			if !isHop {
				t.Fatalf("clientIP(%q, %q): got %v, neither the peer nor a hop", remote, forwardedFor, got)
			}
		}
	})
}
