package admin

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// request reads the establishment of a command from the path and its command id from the
// request; on failure it has answered.
func request(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (app.Request, bool) {
	slug, ok := pathSlug(w, ps, "slug")
	return app.Request{Slug: slug, CommandID: commandID(r)}, ok
}

// versionPath validates the menu type and version of a version's path; on failure it has
// answered 422 naming the bad one.
func versionPath(w http.ResponseWriter, ps httprouter.Params) (typ, version domain.Slug, ok bool) {
	if typ, ok = pathSlug(w, ps, "menu_type"); ok {
		version, ok = pathSlug(w, ps, "version")
	}
	return typ, version, ok
}

// pathSlug validates a slug path parameter; on failure it has answered 422 naming it.
func pathSlug(w http.ResponseWriter, ps httprouter.Params, name string) (domain.Slug, bool) {
	s, err := domain.ParseSlug(ps.ByName(name))
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{name + ": " + err.Error()})
		return "", false
	}
	return s, true
}

// decodeBody reads a JSON body strictly; on failure it has answered 400, 413 or 415.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "Unsupported media type", []string{"Content-Type: want application/json"})
			return false
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err == nil {
		err = decodeDocument(data, v)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || strings.Contains(err.Error(), "http: request body too large") {
			writeError(w, http.StatusRequestEntityTooLarge, "Request body too large", []string{fmt.Sprintf("body: at most %d bytes", MaxBodyBytes)})
			return false
		}
		details := fieldDetails(err)
		if details == nil {
			details = []string{err.Error()}
		}
		writeError(w, http.StatusBadRequest, "Bad request", details)
		return false
	}
	return true
}
