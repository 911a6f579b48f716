package admin

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// getAudit answers a page of an establishment's audit, newest first: ?before=<next>&limit=<n>.
func (a *API) getAudit(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	limit, ok := a.queryLimit(w, r, 0, app.MaxAuditPage)
	if !ok {
		return
	}
	page, err := a.cfg.Commands.Audit(r.Context(), slug, r.URL.Query().Get("before"), limit)
	a.answerValue(w, r, http.StatusOK, page, err)
}

// getPlatformAudit answers a page of the audit of the commands on no one establishment.
func (a *API) getPlatformAudit(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	limit, ok := a.queryLimit(w, r, 0, app.MaxAuditPage)
	if !ok {
		return
	}
	page, err := a.cfg.Commands.PlatformAudit(r.Context(), r.URL.Query().Get("before"), limit)
	a.answerValue(w, r, http.StatusOK, page, err)
}

// queryLimit reads ?limit=, a whole number from 1 to most; def when left out. On failure it has
// answered.
func (a *API) queryLimit(w http.ResponseWriter, r *http.Request, def, most int) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		a.fail(w, r, malformed(fmt.Errorf("limit: %q, want a whole number from 1 to %d", v, most)))
		return 0, false
	}
	return n, true
}
