package admin

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// createLoginLink answers 201 with the URL of a new login link to the establishment's API
// settings page, for the person the optional body {"name": ...} names.
func (a *API) createLoginLink(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	var in struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 && !a.decode(w, r, &in) {
		return
	}
	url, expires, err := a.cfg.LoginLinks(r.Context(), slug, in.Name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.cfg.Commands.Record(r.Context(), slug, app.ActionLoginLinkCreated, in.Name)
	writeJSON(w, http.StatusCreated, map[string]any{"url": url, "expires_at": expires.UTC().Format(time.RFC3339)})
}
