package listeners

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// BindAPI binds the read API's listener on addr and answers on it at once: not ready, and what
// for, until ServeAPI. It returns the listener's base URL.
func (s *Set) BindAPI(addr string) (string, error) {
	if _, err := s.Bind(addr, capacity.ListenerAPI, "read api"); err != nil {
		return "", err
	}
	s.starting = &startingHandler{set: s}
	return s.Serve(capacity.ListenerAPI, s.starting), nil
}

// ServeAPI has h, the read API, answer on its listener in place of the starting handler.
func (s *Set) ServeAPI(h http.Handler) { s.starting.real.Store(&h) }

// Waiting says what the process waits for while it starts, for the header Waiting-For; empty
// when nothing.
func (s *Set) Waiting(what string) {
	if what == "" {
		s.waiting.Store(nil)
	} else {
		s.waiting.Store(&what)
	}
}

// startingHandler answers on the read API's address while the process starts: /healthz is 200
// (the process runs), /readyz and every other path 503 with what it waits for in the header
// Waiting-For, until ServeAPI gives it the read API.
type startingHandler struct {
	set  *Set
	real atomic.Pointer[http.Handler]
}

const notReadyBody = `{"error":"Not ready"}`

func (h *startingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if real := h.real.Load(); real != nil {
		(*real).ServeHTTP(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	if r.URL.Path == "/healthz" {
		hdr.Set("Content-Length", "15")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write([]byte(`{"status":"ok"}`))
		}
		return
	}
	waiting := "the documents mirror"
	if p := h.set.waiting.Load(); p != nil {
		waiting = *p
	}
	hdr.Set("Waiting-For", strconv.QuoteToASCII(waiting))
	hdr.Set("Retry-After", "1")
	hdr.Set("Content-Length", strconv.Itoa(len(notReadyBody)))
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		w.Write([]byte(notReadyBody))
	}
}
