package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"
)

// changesPath is the changes feed's path.
const changesPath = "/admin/v1/changes"

// Bounds of the changes feed's parameters.
const (
	maxChangesLimit = 1000
	maxChangesWait  = 60 * time.Second
)

// listChanges answers a page of the changes feed: ?after=<cursor>&limit=<1..1000>&wait=<0..60s>.
func (a *API) listChanges(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	limit, ok := a.queryLimit(w, r, maxChangesLimit, maxChangesLimit)
	if !ok {
		return
	}
	wait := time.Duration(0)
	if v := q.Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			a.fail(w, r, malformed(fmt.Errorf("wait: %q, want a duration from 0s to 60s, such as 30s, or seconds", v)))
			return
		}
		wait = d
	}
	page, err := a.cfg.Changes(r.Context(), q.Get("after"), limit, wait)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// parseWait reads a wait in seconds ("30") or as a Go duration ("30s"), 0 to maxChangesWait.
func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, err
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxChangesWait {
		return 0, fmt.Errorf("out of range")
	}
	return d, nil
}
