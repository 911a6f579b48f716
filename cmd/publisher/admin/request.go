package admin

import (
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// request reads the establishment of a command from the path and its command id from the
// request; on failure it has answered.
func (a *API) request(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (app.Request, bool) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	return app.Request{Slug: slug, CommandID: commandID(r)}, ok
}

// versionPath validates the menu type and version of a version's path; on failure it has
// answered, naming the bad one.
func (a *API) versionPath(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (typ, version domain.Slug, ok bool) {
	if typ, ok = a.pathSlug(w, r, ps, "menu_type"); ok {
		version, ok = a.pathSlug(w, r, ps, "version")
	}
	return typ, version, ok
}

// pathSlug validates a slug path parameter; on failure it has answered, naming it.
func (a *API) pathSlug(w http.ResponseWriter, r *http.Request, ps httprouter.Params, name string) (domain.Slug, bool) {
	s, err := domain.ParseSlug(ps.ByName(name))
	if err != nil {
		a.fail(w, r, invalid(fmt.Errorf("%s: %w", name, err)))
		return "", false
	}
	return s, true
}

// decode reads a JSON body strictly into v; on failure it has answered.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := decodeBody(w, r, v); err != nil {
		a.fail(w, r, err)
		return false
	}
	return true
}

// decodeBody reads a JSON body of at most MaxBodyBytes strictly into v, or returns why not: a
// refusal of its content type, its size, or its content.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return errWantJSON
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err == nil {
		err = decodeDocument(data, v)
	}
	if err != nil {
		return bodyError(err)
	}
	return nil
}
