package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// pageFiles matches the files a reference page loads: its scripts, style sheet and icon.
var pageFiles = regexp.MustCompile(`(?:src|href)="([^"]+)"`)

// TestReferencePages loads the reference page of each listener and every file it names, with no
// key and no token: the read API's answers are checked against its description, and no answer
// counts against a quota.
func TestReferencePages(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.IPQuota = 500 })
	for _, tc := range []struct {
		base, page, description string
		get                     func(path string) reply
	}{
		{m.HTTPURL, "/docs", "openapi.json", func(path string) reply { return m.read(t, http.MethodGet, path) }},
		{m.AdminURL, adminDocsPath, "openapi.json", func(path string) reply { return do(t, http.MethodGet, m.AdminURL+path, nil) }},
	} {
		page := tc.get(tc.page)
		if page.status != http.StatusOK || page.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %d %q, want 200 and a page", tc.page, page.status, page.header.Get("Content-Type"))
		}
		if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "http") {
			t.Errorf("GET %s: Content-Security-Policy %q, want nothing allowed but the page's origin", tc.page, csp)
		}
		if !strings.Contains(string(page.body), `data-url="`+tc.description+`"`) {
			t.Errorf("GET %s: the page does not render %s:\n%s", tc.page, tc.description, page.body)
		}
		files := pageFiles.FindAllStringSubmatch(string(page.body), -1)
		if len(files) < 4 {
			t.Fatalf("GET %s: names %d files, want Swagger UI's script, style sheet, icon and the start script", tc.page, len(files))
		}
		pageURL, _ := url.Parse(tc.base + tc.page)
		for _, f := range files {
			ref, err := url.Parse(f[1])
			if err != nil {
				t.Fatal(err)
			}
			u := pageURL.ResolveReference(ref)
			r := tc.get(u.RequestURI())
			if r.status != http.StatusOK || len(r.body) == 0 || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Errorf("GET %s: %d, %d bytes, Cache-Control %q; want 200, the file, cached for a year", u.RequestURI(), r.status, len(r.body), r.header.Get("Cache-Control"))
			}
			if r.header.Get("RateLimit") != "" {
				t.Errorf("GET %s counts against a quota", u.RequestURI())
			}
		}
		if r := tc.get(tc.page + "/nothing.js"); r.status != http.StatusNotFound || string(r.body) != `{"error":"Not found"}` {
			t.Errorf("GET %s/nothing.js: %d %s, want 404 Not found", tc.page, r.status, r.body)
		}
	}
	// The admin API itself still wants its token.
	if r := do(t, http.MethodGet, m.AdminURL+"/admin/v1/establishments", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /admin/v1/establishments without a token: %d, want 401", r.status)
	}
}
