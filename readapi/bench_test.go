package readapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a reusable ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func newDiscardWriter() *discardWriter { return &discardWriter{header: make(http.Header)} }

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

func (w *discardWriter) reset() {
	clear(w.header)
	w.status, w.n = 0, 0
}

// hotPaths are the requests that must not allocate once pools are warm.
var hotPaths = []struct {
	name, target string
	header       http.Header
	status       int
}{
	{"Establishment", "/api/v1/establishments/" + alice, http.Header{"X-Api-Key": {keyAlice}}, http.StatusOK},
	{"MenuDetail", "/api/v1/establishments/" + alice + "/menus/lunch?locale=en", http.Header{"X-Api-Key": {keyAlice}}, http.StatusOK},
	{"NotModified", "/api/v1/establishments/" + alice + "/menus/lunch?locale=en",
		http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {`"other", ` + etag(alice, "menus/lunch.en")}}, http.StatusNotModified},
	{"RedirectMenus", "/r/menus?establishment=" + alice + "&menu_type=lunch&locale=en", nil, http.StatusFound},
	{"Unauthorized", "/api/v1/establishments/" + alice, http.Header{"X-Api-Key": {keyBob}}, http.StatusUnauthorized},
	{"NotFound", "/api/v1/establishments/nobody", http.Header{"X-Api-Key": {keyAlice}}, http.StatusNotFound},
}

func newHotRequest(target string, header http.Header) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	return r
}

func benchmarkPath(b *testing.B, target string, header http.Header, status int) {
	h := newServer(fixtureSource(b), discardLogger()).Handler()
	r := newHotRequest(target, header)
	w := newDiscardWriter()
	h.ServeHTTP(w, r) // warm the router's parameter pool
	if w.status != status {
		b.Fatalf("status: got %d, want %d", w.status, status)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
	}
	if w.status != status {
		b.Fatalf("status: got %d, want %d", w.status, status)
	}
}

func BenchmarkGetEstablishment(b *testing.B) {
	p := hotPaths[0]
	benchmarkPath(b, p.target, p.header, p.status)
}

func BenchmarkGetMenuDetail(b *testing.B) {
	p := hotPaths[1]
	benchmarkPath(b, p.target, p.header, p.status)
}

func BenchmarkNotModified(b *testing.B) {
	p := hotPaths[2]
	benchmarkPath(b, p.target, p.header, p.status)
}

func BenchmarkRedirectMenus(b *testing.B) {
	p := hotPaths[3]
	benchmarkPath(b, p.target, p.header, p.status)
}

func BenchmarkUnauthorized(b *testing.B) {
	p := hotPaths[4]
	benchmarkPath(b, p.target, p.header, p.status)
}

func BenchmarkGetMenuDetailParallel(b *testing.B) {
	h := newServer(fixtureSource(b), discardLogger()).Handler()
	p := hotPaths[1]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newHotRequest(p.target, p.header)
		w := newDiscardWriter()
		for pb.Next() {
			w.reset()
			h.ServeHTTP(w, r)
		}
	})
}
