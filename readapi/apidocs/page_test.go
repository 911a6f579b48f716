package apidocs_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/opencarte/publisher/readapi/apidocs"
)

func newPage(t *testing.T) *apidocs.Page {
	t.Helper()
	p, err := apidocs.New(apidocs.Config{Path: "/docs", Description: "openapi.json", Title: "Reference"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func get(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestPageNamesItsFilesAndNoInlineScript(t *testing.T) {
	w := get(newPage(t), http.MethodGet, "/docs")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/html; charset=utf-8" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("got %d %q %q, want 200, HTML, no-cache", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"))
	}
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self';"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	body := w.Body.String()
	for _, want := range []string{`data-url="openapi.json"`, `<title>Reference</title>`, `src="docs/swagger-ui-bundle.js?v=`, `src="docs/docs.js?v=`, `href="docs/swagger-ui.css?v=`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s:\n%s", want, body)
		}
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\son[a-z]+=`).MatchString(body) {
		t.Errorf("the page holds an inline script or style, which its policy refuses:\n%s", body)
	}
}

func TestFiles(t *testing.T) {
	p := newPage(t)
	version := regexp.MustCompile(`docs\.js\?v=([0-9a-f]+)"`).FindStringSubmatch(get(p, http.MethodGet, "/docs").Body.String())
	if version == nil {
		t.Fatal("no version in the page")
	}
	target := "/docs/swagger-ui-bundle.js?v=" + version[1]
	compressed := get(p, http.MethodGet, target, "Accept-Encoding", "gzip, br")
	if compressed.Code != 200 || compressed.Header().Get("Content-Encoding") != "gzip" || compressed.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("with gzip: got %d %v, want 200 gzip", compressed.Code, compressed.Header())
	}
	if got := compressed.Header().Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("with the version: Cache-Control %q, want a year", got)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	plain := get(p, http.MethodGet, target, "Accept-Encoding", "gzip;q=0")
	if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" || !bytes.Equal(plain.Body.Bytes(), unzipped) || !bytes.Contains(unzipped, []byte("SwaggerUIBundle")) {
		t.Errorf("without gzip: got %d %q, %d bytes; want 200, the %d bytes of Swagger UI decompressed",
			plain.Code, plain.Header().Get("Content-Encoding"), plain.Body.Len(), len(unzipped))
	}
	if got := plain.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/javascript") {
		t.Errorf("Content-Type %q, want text/javascript", got)
	}
	if got := get(p, http.MethodGet, "/docs/docs.js").Header().Get("Cache-Control"); got != "no-cache" {
		t.Errorf("without the version: Cache-Control %q, want no-cache", got)
	}
	if got := get(p, http.MethodGet, "/docs/docs.js?v=0123").Header().Get("Cache-Control"); got != "no-cache" {
		t.Errorf("with another version: Cache-Control %q, want no-cache", got)
	}
	head := get(p, http.MethodHead, target, "Accept-Encoding", "gzip")
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != compressed.Header().Get("Content-Length") {
		t.Errorf("HEAD: got %d, %d bytes, Content-Length %q; want GET's header without a body", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
	}
}

func TestErrors(t *testing.T) {
	p := newPage(t)
	for _, tc := range []struct {
		method, target string
		status         int
		body           string
	}{
		{http.MethodGet, "/docs/nothing.js", 404, `{"error":"Not found"}`},
		{http.MethodGet, "/docs/", 404, `{"error":"Not found"}`},
		{http.MethodGet, "/docs/static/docs.js", 404, `{"error":"Not found"}`},
		{http.MethodGet, "/docs/swagger-ui-bundle.js.gz", 404, `{"error":"Not found"}`},
		{http.MethodPost, "/docs", 405, `{"error":"Method not allowed"}`},
		{http.MethodDelete, "/docs/docs.js", 405, `{"error":"Method not allowed"}`},
	} {
		w := get(p, tc.method, tc.target)
		if w.Code != tc.status || w.Body.String() != tc.body || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: got %d %s, want %d %s", tc.method, tc.target, w.Code, w.Body, tc.status, tc.body)
		}
		if tc.status == 405 && w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q, want GET, HEAD", tc.method, tc.target, w.Header().Get("Allow"))
		}
	}
}

func TestMount(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := newPage(t).Mount(next)
	for target, want := range map[string]int{"/docs": 200, "/docs/docs.js": 200, "/docs/none": 404, "/docsx": 418, "/": 418, "/admin/v1/status": 418} {
		if got := get(h, http.MethodGet, target).Code; got != want {
			t.Errorf("GET %s: got %d, want %d", target, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	valid := apidocs.Config{Path: "/admin/docs", Description: "openapi.json", Title: "Admin API reference"}
	if err := valid.Validate(); err != nil {
		t.Fatalf("%+v: %v", valid, err)
	}
	for name, change := range map[string]func(*apidocs.Config){
		"relative path":         func(c *apidocs.Config) { c.Path = "docs" },
		"final slash":           func(c *apidocs.Config) { c.Path = "/docs/" },
		"unclean path":          func(c *apidocs.Config) { c.Path = "/a/../docs" },
		"no description":        func(c *apidocs.Config) { c.Description = "" },
		"description elsewhere": func(c *apidocs.Config) { c.Description = "https://example.com/openapi.json" },
		"description on a host": func(c *apidocs.Config) { c.Description = "//example.com/openapi.json" },
		"absolute description":  func(c *apidocs.Config) { c.Description = "/openapi.json" },
		"no title":              func(c *apidocs.Config) { c.Title = "" },
	} {
		c := valid
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, c)
		}
		if _, err := apidocs.New(c); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}
