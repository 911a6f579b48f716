package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// getAudit answers a page of an establishment's audit, newest first: ?before=<next>&limit=<n>.
func (a *API) getAudit(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > app.MaxAuditPage {
			a.fail(w, r, malformed(fmt.Errorf("limit: %q, want a whole number from 1 to %d", v, app.MaxAuditPage)))
			return
		}
		limit = n
	}
	page, err := a.cfg.Commands.Audit(r.Context(), slug, q.Get("before"), limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

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
	if len(in.Name) > maxLinkName || strings.ContainsFunc(in.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		a.fail(w, r, &domain.FieldError{Field: "name", Reason: fmt.Sprintf("want one line of at most %d bytes", maxLinkName)})
		return
	}
	url, expires, err := a.cfg.LoginLinks(r.Context(), slug, in.Name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"url": url, "expires_at": expires.UTC().Format(time.RFC3339)})
}
