package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Provisioning on a NATS cluster that may still be forming: no JetStream meta leader yet, or a
// stream's replicas not placed. A request made then can fail or go unanswered; it is made again.
const (
	provisionAttempt = 5 * time.Second        // bound of one attempt
	provisionBackoff = 250 * time.Millisecond // first wait between attempts, doubled up to provisionMaxWait
	provisionMaxWait = 2 * time.Second
	provisionReport  = 10 * time.Second // how often a process says what it is still waiting for
)

// provision runs open, which creates what names (a stream, a bucket) or binds to it, until it
// succeeds or ctx ends. Every process provisions what it uses: creation is idempotent, so
// processes started together on a new cluster all succeed, whichever comes first. While it
// waits, the process says so in its log, and its read API, when it has one, answers /readyz
// with 503 and what it waits for.
func provision[T any](ctx context.Context, m *Main, what string, open func(context.Context) (T, error)) (T, error) {
	wait, reported := provisionBackoff, time.Time{}
	started := time.Now()
	for {
		attempt, cancel := context.WithTimeout(ctx, provisionAttempt)
		v, err := open(attempt)
		cancel()
		if err == nil {
			if !reported.IsZero() {
				m.Logger.Info("nats: provisioned after waiting", "what", what, "waited", time.Since(started).Round(time.Millisecond))
			}
			m.waiting.Store(nil)
			return v, nil
		}
		if ctx.Err() != nil {
			return v, err
		}
		reason := what + ": " + err.Error()
		m.waiting.Store(&reason)
		if time.Since(reported) >= provisionReport {
			m.Logger.Warn("nats: waiting for JetStream", "what", what, "waited", time.Since(started).Round(time.Second), "err", err)
			reported = time.Now()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, provisionMaxWait)
	}
}

// awaitConnection returns once nc is connected, or ctx ends: a client started before its NATS
// servers waits for them, saying so as provision does.
func awaitConnection(ctx context.Context, m *Main, nc *nats.Conn) error {
	_, err := provision(ctx, m, "a connection to NATS at "+redactedURL(m.Config.NATSURL), func(context.Context) (struct{}, error) {
		if !nc.IsConnected() {
			return struct{}{}, errors.New("not connected")
		}
		return struct{}{}, nil
	})
	return err
}

// redactedURL is u without any password or token it carries.
func redactedURL(u string) string {
	var out []string
	for _, one := range strings.Split(u, ",") {
		if parsed, err := url.Parse(strings.TrimSpace(one)); err == nil && parsed.User != nil {
			parsed.User = nil
			one = parsed.String()
		}
		out = append(out, one)
	}
	return strings.Join(out, ",")
}

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
