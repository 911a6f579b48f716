package apidocs

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Config says where a page is served and what it renders.
type Config struct {
	// Path is the page's path, such as /docs; the files it loads are served under Path + "/".
	Path string
	// Description is the URL of the OpenAPI description the page renders, relative to the page
	// (openapi.json for a page at /docs renders /openapi.json), so that it is the page's origin
	// that serves it.
	Description string
	// Title is the title of the page.
	Title string
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.Path, "/") || strings.HasSuffix(c.Path, "/") || path.Clean(c.Path) != c.Path {
		errs = append(errs, fmt.Errorf("apidocs: path %q is not a clean absolute path without a final slash", c.Path))
	}
	if u, err := url.Parse(c.Description); c.Description == "" || err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(c.Description, "/") {
		errs = append(errs, fmt.Errorf("apidocs: description %q is not a URL relative to the page", c.Description))
	}
	if c.Title == "" {
		errs = append(errs, errors.New("apidocs: config needs a title"))
	}
	return errors.Join(errs...)
}

// Page serves an API reference page and the files it loads.
type Page struct {
	path   string
	html   []byte
	length []string
	assets *assets
}

// New returns the page cfg describes.
func New(cfg Config) (*Page, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set, err := loadAssets()
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	err = pageHTML.Execute(&html, struct{ Title, Files, Description, Version string }{
		Title: cfg.Title, Files: path.Base(cfg.Path), Description: cfg.Description, Version: set.version,
	})
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	return &Page{path: cfg.Path, html: html.Bytes(), length: []string{strconv.Itoa(html.Len())}, assets: set}, nil
}

// pageHTML is the page: Swagger UI's files and the script that starts it, named relative to the
// page so that a proxy may serve it under a path prefix. No inline script or style, so that the
// Content-Security-Policy allows none.
var pageHTML = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="icon" type="image/png" href="{{.Files}}/favicon-32x32.png?v={{.Version}}">
<link rel="stylesheet" href="{{.Files}}/swagger-ui.css?v={{.Version}}">
</head>
<body>
<div id="swagger-ui" data-url="{{.Description}}"></div>
<script src="{{.Files}}/swagger-ui-bundle.js?v={{.Version}}"></script>
<script src="{{.Files}}/docs.js?v={{.Version}}"></script>
</body>
</html>
`))

// The header fields of every answer of the page. The policy lets the page load nothing but from
// its own origin: Swagger UI's files, the description and, with "Try it out", requests to the
// API at that origin. Swagger UI sets style attributes from its scripts, hence 'unsafe-inline'
// for styles only; images it draws are data: URLs.
var (
	contentSecurityPolicy = []string{"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}
	htmlContentType = []string{"text/html; charset=utf-8"}
	nosniff         = []string{"nosniff"}
	noReferrer      = []string{"no-referrer"}
	allowGetHead    = []string{"GET, HEAD"}
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// ServeHTTP answers GET and HEAD on the page's path with the page, and under it with the files
// it loads; anything else with the JSON error body both APIs of the service answer: 404 for an
// unknown file, 405 for another method.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var file *asset
	if r.URL.Path != p.path {
		name, ok := strings.CutPrefix(r.URL.Path, p.path+"/")
		if file = p.assets.files[name]; !ok || file == nil {
			writeError(w, r, http.StatusNotFound, `{"error":"Not found"}`)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = allowGetHead
		writeError(w, r, http.StatusMethodNotAllowed, `{"error":"Method not allowed"}`)
		return
	}
	if file != nil {
		p.assets.serve(w, r, file)
		return
	}
	h := w.Header()
	h["Content-Type"] = htmlContentType
	h["Content-Length"] = p.length
	h["Cache-Control"] = noCache // the next version of the service names other files
	h["Content-Security-Policy"] = contentSecurityPolicy
	h["X-Content-Type-Options"] = nosniff
	h["Referrer-Policy"] = noReferrer
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(p.html) // a failed write means the client is gone
	}
}

// Mount returns a handler that serves the page's path and the paths under it with the page, and
// every other request with next.
func (p *Page) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == p.path || strings.HasPrefix(r.URL.Path, p.path+"/") {
			p.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, r *http.Request, status int, body string) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}
