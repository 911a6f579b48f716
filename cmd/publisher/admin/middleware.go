package admin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/felixge/httpsnoop"
	"github.com/julienschmidt/httprouter"
	"github.com/opencarte/publisher/events"
)

// DefaultMaxInFlight is how many admin requests are handled at once unless configured.
const DefaultMaxInFlight = 64

// bounded lets at most Config.MaxInFlight requests be handled at once; the others wait for a
// turn, or for their client to give up. Thousands of clients at once then cost their
// connections, not thousands of states decoded and encoded side by side. The changes feed is
// not counted: its long polls would hold every turn for a minute, and Config.Changes bounds the
// pages it reads and the reads that wait.
func (a *API) bounded(next http.Handler) http.Handler {
	slots := make(chan struct{}, a.cfg.MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == changesPath {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}

// authenticate refuses every request without a credential, but those to the public paths: the
// admin token, or a scoped token of Config.Tokens, which the request's context then carries (see
// withCredential). The scheme name is case-insensitive (RFC 9110, section 11.1); tokens are
// compared in constant time. A right token is served at once, whatever its address sent before;
// a wrong or missing one is answered 401 after the penalty its address has earned (see failures).
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") {
			t, ok, err := a.credential(r.Context(), strings.TrimLeft(token, " "))
			if err != nil {
				a.fail(w, r, err)
				return
			}
			if ok {
				next.ServeHTTP(w, r.WithContext(withCredential(r.Context(), t)))
				return
			}
		}
		d, done, busy := a.failures.fail(clientOf(r), time.Now())
		if busy {
			w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)))
			writeError(w, http.StatusTooManyRequests, "Too many requests", []string{"Authorization: wrong tokens from this address are waiting already"})
			return
		}
		waited := d <= 0 || events.Sleep(r.Context(), d) == nil
		done()
		if !waited {
			return // the client gave up: nobody reads the answer
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
		writeError(w, http.StatusUnauthorized, "Unauthorized", nil)
	})
}

// observed returns h, telling Observe the status of each of its answers under route. The writer
// h is given keeps every interface of w (and unwraps to it for http.ResponseController).
func (a *API) observed(route string, h httprouter.Handle) httprouter.Handle {
	observe := a.cfg.Observe
	if observe == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		m := httpsnoop.CaptureMetricsFn(w, func(w http.ResponseWriter) { h(w, r, ps) })
		observe(route, m.Code)
	}
}
