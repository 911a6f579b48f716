package readapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/readapi/openapi"
)

func TestServesTheStoredGzipCoding(t *testing.T) {
	h := fixtureHandler(t)
	doc := testDoc(alice, "establishment", 7)
	target := "/api/v1/establishments/" + alice

	w := serve(t, h, http.MethodGet, target, http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"gzip"}})
	if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("got %d Content-Encoding %q, want 200 gzip", w.Code, w.Header().Get("Content-Encoding"))
	}
	if !bytes.Equal(w.Body.Bytes(), doc.Gzip) {
		t.Errorf("body: got %d bytes, want the stored coding (%d bytes)", w.Body.Len(), len(doc.Gzip))
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, doc.Body) {
		t.Errorf("decoded body: got %s, want %s", plain, doc.Body)
	}
	gzTag := dockey.GzipETag(doc.ETag)
	for field, want := range map[string]string{"Etag": gzTag, "Vary": "Accept-Encoding", "Content-Type": "application/json",
		"Cache-Control": "private, no-cache", "Content-Revision": "7"} {
		if got := w.Header().Get(field); got != want {
			t.Errorf("%s: got %q, want %q", field, got, want)
		}
	}

	// Without gzip in Accept-Encoding: the identity body, its own tag, and Vary all the same.
	w = serve(t, h, http.MethodGet, target, http.Header{"X-Api-Key": {keyAlice}})
	if w.Header().Get("Content-Encoding") != "" || w.Header().Get("Etag") != doc.ETag ||
		w.Header().Get("Vary") != "Accept-Encoding" || !bytes.Equal(w.Body.Bytes(), doc.Body) {
		t.Errorf("identity: got Content-Encoding %q Etag %q Vary %q", w.Header().Get("Content-Encoding"), w.Header().Get("Etag"), w.Header().Get("Vary"))
	}

	// Either tag revalidates: the content is the same; the 304 names the coding that would be sent.
	for _, tag := range []string{doc.ETag, gzTag} {
		w = serve(t, h, http.MethodGet, target, http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"gzip"}, "If-None-Match": {tag}})
		if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("Etag") != gzTag {
			t.Errorf("If-None-Match %s: got %d, %d bytes, Etag %q; want 304, empty, %s", tag, w.Code, w.Body.Len(), w.Header().Get("Etag"), gzTag)
		}
	}

	// HEAD announces the length of the coding it would send.
	w = serve(t, h, http.MethodHead, target, http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"gzip"}})
	if w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(doc.Gzip)) {
		t.Errorf("HEAD: got %d bytes, Content-Length %q; want none and %d", w.Body.Len(), w.Header().Get("Content-Length"), len(doc.Gzip))
	}
}

func TestIgnoresACodingThatIsNotWorthIt(t *testing.T) {
	b := testBundle(alice, 7)
	small := dockey.Document{Body: []byte(`{"content_revision":7}`), ETag: `"0000000000000001"`}
	small.Gzip = gzipOf(string(small.Body)) // larger than the body
	b.Hours = small
	b.Establishment.Gzip = []byte("not gzip at all, just bytes that are long enough")
	h := newTestServer(t, fakeSource{alice: mustEntry(t, b)}, Config{Now: newFakeClock().Now}).Handler()
	for _, path := range []string{"", "/hours"} {
		w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice+path, http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"gzip"}})
		if w.Code != 200 || w.Header().Get("Content-Encoding") != "" || w.Header().Get("Vary") != "" {
			t.Errorf("%s: got %d Content-Encoding %q Vary %q, want the identity body only", path, w.Code, w.Header().Get("Content-Encoding"), w.Header().Get("Vary"))
		}
	}
}

func TestServesTheDescription(t *testing.T) {
	h := fixtureHandler(t)
	for _, tc := range []struct {
		path, contentType string
		body              []byte
	}{
		{openapi.JSONPath, openapi.JSONContentType, openapi.JSON()},
		{openapi.YAMLPath, openapi.YAMLContentType, openapi.YAML()},
	} {
		w := serve(t, h, http.MethodGet, tc.path, nil)
		if w.Code != 200 || w.Header().Get("Content-Type") != tc.contentType || !bytes.Equal(w.Body.Bytes(), tc.body) {
			t.Errorf("GET %s: got %d %q, %d bytes; want 200 %s, the embedded document", tc.path, w.Code, w.Header().Get("Content-Type"), w.Body.Len(), tc.contentType)
		}
		if w.Header().Get("RateLimit") != "" {
			t.Errorf("GET %s counts against a quota", tc.path)
		}
	}
}
