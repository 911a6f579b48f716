package main

import (
	"net/http"
	"strconv"
	"sync/atomic"
)

// startingHandler answers on the read API's address while the process starts: /healthz is 200
// (the process runs), /readyz and every other path 503 with what it waits for in the header
// Waiting-For, until serve gives it the read API.
type startingHandler struct {
	m    *Main
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
	if p := h.m.waiting.Load(); p != nil {
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
