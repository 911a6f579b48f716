//go:build browser

package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/opencarte/publisher/cmd/publisher/settings"
)

// TestSettingsPage drives the API settings page of the running service in Chromium (Debian's
// chromium package, headless), as the establishment's administrator would: a login link made
// through the admin API, followed from another site, opens the page once and not twice; the API
// is disabled then enabled and the key shown opens the read API; the key is regenerated after
// the confirmation, the old one refused and the new one accepted; the redirect is turned off and
// on and its snippet's URL answers 302; a webhook is added and its test delivery is listed; a form
// posted from another origin is refused. axe-core (testdata/axe of package settings, installed
// with npm ci) finds no serious or critical violation in French, in English, and with a key
// shown. Screenshots of each state are written to $SETTINGS_SCREENSHOTS, or a new directory the
// test logs.
func TestSettingsPage(t *testing.T) {
	var received atomic.Int64
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})
	importDemo(t, m)
	s := &settingsSession{t: t, m: m, axe: installAxe(t), shots: screenshotDir(t)}
	ctx, cancel := context.WithTimeout(chromium(t), 3*time.Minute)
	defer cancel()
	s.ctx = ctx
	watchViolations(t, ctx)
	// A browser asking for German gets the page in French, its default.
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "de-DE,de;q=0.9"}}); err != nil {
		t.Fatal(err)
	}

	s.openOnce(s.loginLink("Marcel"))
	s.enableAndRegenerate()
	s.navigate(m.AdminURL + settings.Path + "lang/en")
	s.check("overview-en", "en")
	s.redirectSnippet()
	s.webhook(receiver.URL+"/hook", &received)
	s.postFromAnotherOrigin()
	s.navigate(m.AdminURL + settings.Path)
	s.submit(`form.logout button`)
	if got := s.navigate(m.AdminURL + settings.Path); got != http.StatusUnauthorized {
		t.Errorf("the page after signing out: got %d, want 401", got)
	}
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.violations`)); err != nil || len(v) > 0 {
		t.Errorf("Content-Security-Policy violations: %q %v", v, err)
	}
}

// openOnce follows link from another site onto the page, in French, then opens it again: 410.
func (s *settingsSession) openOnce(link string) {
	s.followFromAnotherSite(link)
	s.check("overview-fr", "fr")
	if got := s.navigate(link); got != http.StatusGone || !strings.Contains(s.text("h1"), "déjà utilisé") {
		s.t.Errorf("the login link opened again: got %d %q, want 410 saying it was used", got, s.text("h1"))
	}
	s.navigate(s.m.AdminURL + settings.Path)
}

// enableAndRegenerate disables and enables the API, checks the key shown opens the read API,
// then regenerates it once the box is ticked: the old key is refused, the new one accepted.
func (s *settingsSession) enableAndRegenerate() {
	t, m := s.t, s.m
	s.submit(`form[action$="/api/disable"] button`)
	s.submit(`form[action$="/api/enable"] button`)
	first := s.value("#api-key")
	s.wantVisible(`button[data-copy="api-key"]`) // the script ran, under the page's policy
	s.check("key-shown-fr", "fr")
	eventually(t, "the key shown opens the read API", func() bool { return m.get(t, est, first).status == http.StatusOK })
	if s.navigate(m.AdminURL + settings.Path); strings.Contains(s.html(), first) {
		t.Error("the key is still on the page after it was shown")
	}

	// Not confirmed: the browser does not send the form (the server refuses it too, 422).
	s.do(void(chromedp.Evaluate[bool](`window.leaving = true`)), chromedp.Click(chromedp.CSS(`form[action$="/api/regenerate"] button`)))
	if stayed, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](`window.leaving === true && document.querySelector("#confirm-regenerate").validity.valueMissing`)); err != nil || !stayed {
		t.Errorf("regenerating without the box ticked: the form was sent (%v)", err)
	}
	if got := m.get(t, est, first).status; got != http.StatusOK {
		t.Errorf("the key after an unconfirmed regeneration: got %d, want 200", got)
	}
	s.do(chromedp.Click(chromedp.CSS("#confirm-regenerate")))
	s.submit(`form[action$="/api/regenerate"] button`)
	second := s.value("#api-key")
	eventually(t, "the new key opens the read API", func() bool { return m.get(t, est, second).status == http.StatusOK })
	if got := m.get(t, est, first).status; second == first || got != http.StatusUnauthorized {
		t.Errorf("the previous key after regenerating: got %d, want 401", got)
	}
}

// redirectSnippet turns the redirect off and on, and follows a snippet's URL: 302.
func (s *settingsSession) redirectSnippet() {
	s.submit(`form[action$="/redirect"] button`) // the demo's redirect is on: off
	s.submit(`form[action$="/redirect"] button`) // and on again
	if got := s.text("#redirect-state"); got != "enabled" {
		s.t.Errorf("redirect state after turning it on: %q", got)
	}
	snippet := regexp.MustCompile(`src="([^"]+)"`).FindStringSubmatch(s.value("#snippet-la-carte-en"))
	if snippet == nil {
		s.t.Fatalf("no <img> in the snippet of la-carte in English")
	}
	if r := do(s.t, http.MethodGet, html.UnescapeString(snippet[1]), nil); r.status != http.StatusFound {
		s.t.Errorf("GET %s, the snippet's URL: got %d, want 302", snippet[1], r.status)
	}
}

// webhook adds the receiver at url, whose secret is shown once, and sends it a test delivery,
// which the page lists; received counts what the receiver got.
func (s *settingsSession) webhook(url string, received *atomic.Int64) {
	s.do(chromedp.SetValue(chromedp.CSS("#webhook-url"), url))
	s.submit(`form.add button`)
	secret := s.value("#webhook-secret")
	if !strings.HasPrefix(secret, "whsec_") {
		s.t.Errorf("webhook secret shown: %q", secret)
	}
	s.check("webhook-added-en", "en")
	s.submit(`form[action$="/test"] button`)
	if strings.Contains(s.html(), secret) {
		s.t.Error("the webhook's secret is still on the page after it was shown")
	}
	if !strings.Contains(s.text("#status"), "answered 204") || !strings.Contains(s.text("tr.delivery"), "ping") || received.Load() == 0 {
		s.t.Errorf("test delivery: status %q, deliveries %q, receiver got %d", s.text("#status"), s.text("tr.delivery"), received.Load())
	}
	s.check("webhook-tested-en", "en")
}

// settingsSession is the administrator's browser on the settings page of m.
type settingsSession struct {
	t     *testing.T
	m     *Main
	ctx   context.Context
	axe   string // axe-core's script
	shots string // where screenshots go
}

// loginLink makes a login link through the admin API, as the platform's back office would.
func (s *settingsSession) loginLink(name string) string {
	r := s.m.admin(s.t, http.MethodPost, "/admin/v1/establishments/chez-marcel/login-links", []byte(`{"name": "`+name+`"}`))
	u, _ := r.json(s.t)["url"].(string)
	if r.status != http.StatusCreated || !strings.HasPrefix(u, s.m.AdminURL+settings.Path) {
		s.t.Fatalf("login link: got %d %s", r.status, r.body)
	}
	return u
}

// followFromAnotherSite opens link from a page of another site, as a back office's link is: its
// page, then its button.
func (s *settingsSession) followFromAnotherSite(link string) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Back office</title><a id="go" href="%s">API settings</a>`, html.EscapeString(link))
	}))
	s.t.Cleanup(site.Close)
	// localhost and 127.0.0.1 are two sites: the navigation is cross-site.
	s.navigate(strings.Replace(site.URL, "127.0.0.1", "localhost", 1))
	s.do(chromedp.Click(chromedp.CSS("#go")))
	s.do(chromedp.WaitVisible(chromedp.CSS("#open")))
	s.check("open-fr", "fr")
	s.submit("#open")
	s.do(chromedp.WaitVisible(chromedp.CSS("#api-title")))
	if loc, _ := chromedp.Run(s.ctx, chromedp.Location()); loc != s.m.AdminURL+settings.Path {
		s.t.Errorf("after the login link: at %s, want %s, without the link's secret", loc, s.m.AdminURL+settings.Path)
	}
}

// postFromAnotherOrigin submits, from a page of another origin, a form of the settings page with
// the session's own token: it is refused, and the API stays on.
func (s *settingsSession) postFromAnotherOrigin() {
	s.navigate(s.m.AdminURL + settings.Path)
	csrf := s.value(`input[name="csrf"]`)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Elsewhere</title><form id="f" method="post" action="%s"><input type="hidden" name="csrf" value="%s"><button>Go</button></form>`,
			html.EscapeString(s.m.AdminURL+settings.Path+"api/disable"), html.EscapeString(csrf))
	}))
	s.t.Cleanup(site.Close)
	s.navigate(site.URL) // another port: the same site, another origin
	s.submit("#f button")
	if got := s.status(); got != http.StatusForbidden {
		s.t.Errorf("a form posted from %s: got %d %q, want 403", site.URL, got, s.text("h1"))
	}
	if st := s.m.admin(s.t, http.MethodGet, "/admin/v1/establishments/chez-marcel", nil); !strings.Contains(string(st.body), `"public_api_enabled":true`) {
		s.t.Errorf("a form from another origin changed the settings: %s", st.body)
	}
}

func (s *settingsSession) do(a ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, a...); err != nil {
		s.t.Fatal(err)
	}
}

// navigate opens u and returns the status of the answer.
func (s *settingsSession) navigate(u string) int {
	s.t.Helper()
	resp, err := chromedp.Run(s.ctx, chromedp.NavigateResponse(u))
	if err != nil {
		s.t.Fatalf("open %s: %v", u, err)
	}
	return int(resp.Status)
}

// submit clicks the button of a form and waits for the answer to load.
func (s *settingsSession) submit(button string) {
	s.t.Helper()
	s.do(void(chromedp.Evaluate[bool](`window.leaving = true`)), chromedp.Click(chromedp.CSS(button)))
	s.waitLoaded()
}

// waitLoaded waits for the page the last action led to to have loaded: the page it left set
// window.leaving. Evaluating while the page changes fails; that is polled again.
func (s *settingsSession) waitLoaded() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](`!window.leaving && document.readyState === "complete"`))
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the page did not load within 30s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// void is a, its value dropped.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// status is the HTTP status of the page shown.
func (s *settingsSession) status() int {
	s.t.Helper()
	n, err := chromedp.Run(s.ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *settingsSession) text(sel string) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[string](fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.textContent).join(" ")`, sel)))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(v)
}

func (s *settingsSession) value(sel string) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		s.t.Fatalf("value of %s: %v", sel, err)
	}
	return v
}

func (s *settingsSession) html() string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

func (s *settingsSession) wantVisible(sel string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		s.t.Errorf("%s is not visible: %v", sel, err)
	}
}

// check checks the page shown is in lang, runs axe-core on it, and writes its screenshot as
// <name>.png.
func (s *settingsSession) check(name, lang string) {
	s.t.Helper()
	if got, _ := chromedp.Run(s.ctx, chromedp.Evaluate[string](`document.documentElement.lang`)); got != lang {
		s.t.Errorf("%s: the page is in %q, want %q", name, got, lang)
	}
	const run = `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => v.impact + " " + v.id + ": " + v.help + " at " + v.nodes.map(n => n.target.join(" ")).join(", ")))`
	if _, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](s.axe+"\n;true")); err != nil {
		s.t.Fatalf("inject axe-core: %v", err)
	}
	violations, err := chromedp.Run(s.ctx, chromedp.Evaluate[[]string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		s.t.Fatalf("run axe-core: %v", err)
	}
	for _, v := range violations {
		s.t.Errorf("%s: accessibility: %s", name, v)
	}
	png, err := chromedp.Run(s.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.shots, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// installAxe installs the axe-core that testdata/axe of package settings pins, with npm ci in a
// copy, and returns its script.
func installAxe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("settings", "testdata", "axe"))); err != nil {
		t.Fatal(err)
	}
	npm := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (the accessibility check needs npm and the npm registry): %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return string(script)
}

// screenshotDir returns the directory of the screenshots: $SETTINGS_SCREENSHOTS, or a new one
// under the temporary directory, which is logged.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SETTINGS_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "settings-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of the settings page: %s", dir)
	return dir
}
