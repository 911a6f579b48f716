package admin

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/tokens"
)

// TestReadScopeOnlyReads wants every route a read token may use to be a GET.
func TestReadScopeOnlyReads(t *testing.T) {
	for _, rt := range fullSurface() {
		if rt.access != noCredential && rt.access.permits(tokens.Read) && rt.method != http.MethodGet {
			t.Errorf("%s %s: a read token may use it", rt.method, rt.path)
		}
	}
}

// TestOtherEstablishmentsDoNotExist sends every route naming an establishment, under a token of
// another establishment, and wants the 404 of an unknown establishment without the route's
// handler running; and every route naming none, under the same token, refused unless it serves
// establishment tokens.
func TestOtherEstablishmentsDoNotExist(t *testing.T) {
	a := &API{cfg: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	own := tokens.Token{ID: "tok_1", Name: "owner", Scope: tokens.Establishment, Establishments: []string{"chez-marcel"}}
	for _, rt := range fullSurface() {
		if rt.access == noCredential {
			continue
		}
		ran := false
		h := a.allow(rt.access, func(http.ResponseWriter, *http.Request, httprouter.Params) { ran = true })
		w := httptest.NewRecorder()
		r := httptest.NewRequest(rt.method, "/", nil)
		r = r.WithContext(withCredential(r.Context(), own))
		var ps httprouter.Params
		for _, seg := range strings.Split(rt.path, "/") {
			if name, ok := strings.CutPrefix(seg, ":"); ok {
				ps = append(ps, httprouter.Param{Key: name, Value: "le-zinc"})
			}
		}
		h(w, r, ps)
		switch {
		case ps.ByName("slug") != "":
			want := `{"error":"Not found","details":["establishment \"le-zinc\": domain: establishment not found"]}`
			if ran || w.Code != http.StatusNotFound || strings.TrimSpace(w.Body.String()) != want {
				t.Errorf("%s %s: ran %t, answered %d %s", rt.method, rt.path, ran, w.Code, w.Body)
			}
		case ran || w.Code != http.StatusForbidden:
			t.Errorf("%s %s names no establishment: ran %t, answered %d", rt.method, rt.path, ran, w.Code)
		}
	}
}
