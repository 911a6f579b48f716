package admin

import (
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// maxLinkName bounds the name a login link is made for.
const maxLinkName = 100

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
	in.Name = strings.TrimSpace(in.Name)
	if err := domain.ValidateLine(in.Name, maxLinkName); err != nil {
		a.fail(w, r, &domain.FieldError{Field: "name", Reason: err.Error()})
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
