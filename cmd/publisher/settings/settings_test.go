package settings_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
)

// TestLinkOpensOnce opens one link from two browsers at once, through two pages on their own
// connections as two admin processes: one gets a session, the other the page saying the link was
// used; and nobody gets it later.
func TestLinkOpensOnce(t *testing.T) {
	f := newFixture(t)
	other := f.newPage(t)
	for range 5 {
		u := f.link(t, "Marcel")
		// Reading the link's page, as a link preview would, uses nothing.
		for range 2 {
			if a := newBrowser(t).do(http.MethodGet, u, nil); a.status != http.StatusOK {
				t.Fatalf("the link's page: got %d", a.status)
			}
		}
		form := url.Values{"secret": {secretOf(u)}}.Encode()
		answers := make([]int, 2)
		var wg sync.WaitGroup
		for i, page := range []*settings.Page{f.page, other} {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, settings.Path+"open", strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				page.ServeHTTP(rec, req)
				answers[i] = rec.Code
			})
		}
		wg.Wait()
		if slices.Sort(answers); !slices.Equal(answers, []int{http.StatusSeeOther, http.StatusGone}) {
			t.Fatalf("two openings at once: got %v, want one 303 and one 410", answers)
		}
		if a := f.post(newBrowser(t), "open", "", "secret", secretOf(u)); a.status != http.StatusGone {
			t.Errorf("third opening: got %d, want 410", a.status)
		}
		if a := newBrowser(t).do(http.MethodGet, u, nil); a.status != http.StatusGone || !strings.Contains(a.body, "already opened") && !strings.Contains(a.body, "déjà été ouvert") {
			t.Errorf("third opening: got %d %.200s, want 410 saying the link was used", a.status, a.body)
		}
	}
}

// TestLinkExpires: a link not opened within its lifetime is refused, as one never made is.
func TestLinkExpires(t *testing.T) {
	f := newFixture(t)
	u := f.link(t, "")
	f.clock.add(settings.DefaultLinkLifetime)
	if a := newBrowser(t).do(http.MethodGet, u, nil); a.status != http.StatusGone {
		t.Errorf("expired link: got %d, want 410", a.status)
	}
	if a := newBrowser(t).do(http.MethodGet, f.web.URL+settings.Path+"open/not-a-link", nil); a.status != http.StatusGone {
		t.Errorf("unknown link: got %d, want 410", a.status)
	}
}

// TestCreateLinkRefusals: an unknown establishment and a bad name are refused, naming the field.
func TestCreateLinkRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := app.WithActor(t.Context(), platform)
	if _, _, err := f.page.CreateLink(ctx, "nowhere", ""); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown establishment: got %v, want domain.ErrNotFound", err)
	}
	_, _, err := f.page.CreateLink(ctx, slug, "two\nlines")
	if fe := domain.FieldErrors(err); len(fe) != 1 || fe[0].Field != "name" {
		t.Errorf("bad name: got %v, want a field error on name", err)
	}
	u := f.link(t, "Marcel")
	if !strings.HasPrefix(u, f.web.URL+settings.Path+"open/") {
		t.Errorf("link %q: want it under %s", u, f.web.URL+settings.Path)
	}
	if secret := u[strings.LastIndex(u, "/")+1:]; len(secret) < 22 || strings.Contains(f.logs.String(), secret) {
		t.Errorf("link secret %q: want at least 128 bits, never logged; logs:\n%s", secret, f.logs)
	}
}

// TestSession: a link opens a session whose cookie is HttpOnly, SameSite=Strict and for the
// page's path; the page names the establishment and who signed in; signing out, or the session
// expiring, leads to the page asking for a new link.
func TestSession(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	open := f.enter(t, b, f.link(t, "Marcel"))
	cookie := open.header.Get("Set-Cookie")
	for _, want := range []string{"settings-session=", "Path=" + settings.Path, "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q: want %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("session cookie %q over plain HTTP: want it without Secure", cookie)
	}
	page := b.do(http.MethodGet, f.web.URL+settings.Path, nil)
	if page.status != http.StatusOK || !strings.Contains(page.body, "Chez Marcel") || !strings.Contains(page.body, "Marcel.") {
		t.Fatalf("page: got %d %.300s", page.status, page.body)
	}
	if a := newBrowser(t).do(http.MethodGet, f.web.URL+settings.Path, nil); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "nouveau lien") {
		t.Errorf("without a session: got %d %.300s, want 401 asking for a new link", a.status, a.body)
	}
	// A link opened in a browser with a session ends that session.
	site, _ := url.Parse(f.web.URL + settings.Path)
	var previous string
	for _, c := range b.client.Jar.Cookies(site) {
		previous = c.Name + "=" + c.Value
	}
	f.enter(t, b, f.link(t, "Marcel"))
	if a := newBrowser(t).do(http.MethodGet, f.web.URL+settings.Path, nil, "Cookie", previous); a.status != http.StatusUnauthorized {
		t.Errorf("the session a new link replaced: got %d, want 401", a.status)
	}
	page = b.do(http.MethodGet, f.web.URL+settings.Path, nil)
	if a := f.post(b, "logout", token(t, page)); a.status != http.StatusOK {
		t.Errorf("sign out: got %d", a.status)
	}
	if a := b.do(http.MethodGet, f.web.URL+settings.Path, nil); a.status != http.StatusUnauthorized {
		t.Errorf("after signing out: got %d, want 401", a.status)
	}

	late := newBrowser(t)
	f.signIn(t, late)
	f.clock.add(settings.DefaultSessionLifetime)
	if a := late.do(http.MethodGet, f.web.URL+settings.Path, nil); a.status != http.StatusUnauthorized {
		t.Errorf("expired session: got %d, want 401", a.status)
	}
}

// TestSecureCookie: over TLS the session cookie is Secure and named with the __Host- prefix,
// which wants the path /.
func TestSecureCookie(t *testing.T) {
	f := newFixture(t)
	u := f.link(t, "")
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, settings.Path+"open", strings.NewReader(url.Values{"secret": {secretOf(u)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.TLS = &tls.ConnectionState{}
	f.page.ServeHTTP(rec, req)
	cookie := rec.Header().Get("Set-Cookie")
	for _, want := range []string{"__Host-settings-session=", "Path=/;", "Secure", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie over TLS %q: want %s", cookie, want)
		}
	}
}

// TestFormsRefused: a form from another origin, without the session's token or without a
// session is refused, and changes nothing.
func TestFormsRefused(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	csrf := token(t, f.signIn(t, b))
	for _, tc := range []struct {
		name   string
		csrf   string
		header []string
		status int
	}{
		{"cross-site", csrf, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site, other origin", csrf, []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"other Origin", csrf, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"no token", "", nil, http.StatusForbidden},
		{"another token", strings.Repeat("A", len(csrf)), nil, http.StatusForbidden},
	} {
		form := map[string][]string{"csrf": {tc.csrf}}
		if a := b.do(http.MethodPost, f.web.URL+settings.Path+"api/disable", form, tc.header...); a.status != tc.status {
			t.Errorf("%s: got %d, want %d", tc.name, a.status, tc.status)
		}
	}
	if a := newBrowser(t).do(http.MethodPost, f.web.URL+settings.Path+"api/disable", map[string][]string{"csrf": {csrf}}); a.status != http.StatusUnauthorized {
		t.Errorf("no session: got %d, want 401", a.status)
	}
	st, err := f.commands.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if !*st.Establishment.Settings.PublicAPIEnabled {
		t.Error("a refused form disabled the API")
	}
	if a := f.post(b, "api/disable", csrf); a.status != http.StatusSeeOther {
		t.Errorf("the page's own form: got %d, want 303", a.status)
	}
}

// TestHeaders: every answer carries the page's headers; its files are cached by content hash.
func TestHeaders(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	page := f.signIn(t, b)
	asset := regexp.MustCompile(`href="(` + settings.Path + `assets/style\.[0-9a-f]{16}\.css)"`).FindStringSubmatch(page.body)
	if asset == nil {
		t.Fatalf("no hashed style sheet in the page")
	}
	for _, path := range []string{"", "nowhere", "open/x", asset[1]} {
		a := b.do(http.MethodGet, f.web.URL+settings.Path+strings.TrimPrefix(path, settings.Path), nil)
		h := a.header
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
		} {
			if h.Get(name) != want {
				t.Errorf("GET %s: %s %q, want %q", path, name, h.Get(name), want)
			}
		}
		wantCache := "no-store"
		if path == asset[1] {
			wantCache = "public, max-age=31536000, immutable"
		}
		if h.Get("Cache-Control") != wantCache {
			t.Errorf("GET %s: Cache-Control %q, want %q", path, h.Get("Cache-Control"), wantCache)
		}
	}
}

// TestLanguage: French by default and for languages the page does not speak, English when
// Accept-Language prefers it, and the switch wins over both.
func TestLanguage(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	f.signIn(t, b)
	for _, tc := range []struct{ accept, lang, title string }{
		{"", "fr", "Réglages de l&#39;API"},
		{"de-DE,de;q=0.9", "fr", "Réglages de l&#39;API"},
		{"en-GB,en;q=0.9,fr;q=0.5", "en", "API settings"},
		{"fr-CA,en;q=0.8", "fr", "Réglages de l&#39;API"},
	} {
		a := b.do(http.MethodGet, f.web.URL+settings.Path, nil, "Accept-Language", tc.accept)
		if !strings.Contains(a.body, `<html lang="`+tc.lang+`">`) || !strings.Contains(a.body, "<h1>"+tc.title) {
			t.Errorf("Accept-Language %q: want lang %s and %q; got %.200s", tc.accept, tc.lang, tc.title, a.body)
		}
	}
	if a := b.do(http.MethodGet, f.web.URL+settings.Path+"lang/en", nil); a.status != http.StatusSeeOther {
		t.Fatalf("switch to English: got %d", a.status)
	}
	if a := b.do(http.MethodGet, f.web.URL+settings.Path, nil, "Accept-Language", "fr"); !strings.Contains(a.body, `<html lang="en">`) {
		t.Errorf("after the switch to English, with Accept-Language fr: got %.200s", a.body)
	}
}

// TestMessageTables: each language has every text of the other.
func TestMessageTables(t *testing.T) {
	fr, en := settings.Texts("fr"), settings.Texts("en")
	for k := range fr {
		if _, ok := en[k]; !ok {
			t.Errorf("%q has no English text", k)
		}
	}
	for k := range en {
		if _, ok := fr[k]; !ok {
			t.Errorf("%q has no French text", k)
		}
	}
}
