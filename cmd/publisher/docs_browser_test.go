//go:build browser

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestReferencePagesRenderOffline opens /docs and /admin/docs of the running service in Chromium
// (Debian's chromium package, headless) and wants every operation of each description rendered,
// with every request the page made sent to the service itself: no CDN, font or validator, no
// violation of the page's Content-Security-Policy.
func TestReferencePagesRenderOffline(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	for _, tc := range []struct{ name, base, page, description string }{
		{"read", m.HTTPURL, "/docs", "/openapi.json"},
		{"admin", m.AdminURL, adminDocsPath, "/admin/openapi.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := operationSummaries(t, tc.base+tc.description)
			got, requests, violations := render(t, tc.base+tc.page)
			for _, s := range want {
				if !slices.Contains(got, s) {
					t.Errorf("operation %q is not on the page; it shows %q", s, got)
				}
			}
			for _, u := range requests {
				if !strings.HasPrefix(u, tc.base+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
					t.Errorf("the page requested %s, outside the service %s", u, tc.base)
				}
			}
			if !slices.Contains(requests, tc.base+tc.description) {
				t.Errorf("the page did not load %s; it requested %q", tc.description, requests)
			}
			if len(violations) > 0 {
				t.Errorf("Content-Security-Policy violations: %q", violations)
			}
		})
	}
}

// chromium returns the context of a tab of a new headless Chromium (Debian's chromium package),
// closed when the test ends.
func chromium(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath("chromium"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	return ctx
}

// watchViolations has every page the tab of ctx loads from now on keep the Content-Security-Policy
// violations it meets in window.violations.
func watchViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	const watch = `window.violations = [];
document.addEventListener("securitypolicyviolation", e => window.violations.push(e.violatedDirective + " " + e.blockedURI));`
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watch}); err != nil {
		t.Fatal(err)
	}
}

// operationSummaries returns the summary of every operation of the description at url.
func operationSummaries(t *testing.T, url string) []string {
	t.Helper()
	r := do(t, http.MethodGet, url, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, r.status, r.body)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var summaries []string
	for _, item := range doc.Paths {
		for method, raw := range item {
			var op struct{ Summary string }
			if method == "parameters" || json.Unmarshal(raw, &op) != nil || op.Summary == "" {
				continue
			}
			summaries = append(summaries, op.Summary)
		}
	}
	if len(summaries) < 5 {
		t.Fatalf("%s: %d operation summaries, want the description's", url, len(summaries))
	}
	return summaries
}

// render opens url in a new headless Chromium and returns the operation summaries Swagger UI drew,
// every URL the page requested, and the Content-Security-Policy violations it met.
func render(t *testing.T, url string) (summaries, requests, violations []string) {
	t.Helper()
	ctx := chromium(t)
	// Listening starts the browser and its tab, whose network events chromedp enables.
	var mu sync.Mutex
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	watchViolations(t, ctx)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(".opblock-summary-description"))); err != nil {
		t.Fatalf("render %s: %v", url, err)
	}
	summaries, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".opblock-summary-description"), e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	violations, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.violations`))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return summaries, slices.Clone(requests), violations
}
