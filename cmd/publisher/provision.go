package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
// succeeds, fails for good, or ctx ends. Every process provisions what it uses: creation is
// idempotent, so processes started together on a new cluster all succeed, whichever comes
// first. While it waits, the process says so in its log, and its read API, when it has one,
// answers /readyz with 503 and what it waits for. With the embedded server, which is ready once
// it accepts connections, one attempt is made.
func provision[T any](ctx context.Context, m *Main, what string, open func(context.Context) (T, error)) (T, error) {
	if m.NATS != nil {
		return open(ctx)
	}
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
		if permanent(err) {
			return v, fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		}
		m.waiting.Store(&what)
		if time.Since(reported) >= provisionReport {
			args := []any{"what", what, "waited", time.Since(started).Round(time.Second), "err", err}
			if hasCode(err, errCodeInsufficientResources) && time.Since(started) > time.Minute {
				args = append(args, "hint", "check --replicas against the number of the cluster's JetStream servers")
			}
			m.Logger.Warn("nats: waiting for JetStream", args...)
			reported = time.Now()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, provisionMaxWait)
	}
}

// errCodeInsufficientResources is JetStream's refusal of a stream whose replicas the cluster
// cannot place: lasting when --replicas is more than its servers, passing while it forms.
const errCodeInsufficientResources jetstream.ErrorCode = 10023

// errConnectionClosed is the error of a connection closed for good (bad credentials, say).
var errConnectionClosed = errors.New("connection closed")

// permanent says whether err cannot go away by waiting: a closed connection, or a refusal of
// the configuration by JetStream (replicas on a server without a cluster, a change a stream
// does not allow, JetStream not enabled).
func permanent(err error) bool {
	return errors.Is(err, errConnectionClosed) || errors.Is(err, nats.ErrConnectionClosed) ||
		hasCode(err, 10074, 10052, 10058, 10065, jetstream.JSErrCodeJetStreamNotEnabledForAccount)
}

func hasCode(err error, codes ...jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return slices.Contains(codes, apiErr.ErrorCode)
}

// awaitConnection returns once nc is connected, or ctx ends, or nc closed for good: a client
// started before its NATS servers waits for them, saying so as provision does, with the
// connection's last error.
func awaitConnection(ctx context.Context, m *Main, nc *nats.Conn) error {
	_, err := provision(ctx, m, "the connection to NATS", func(context.Context) (struct{}, error) {
		switch {
		case nc.IsConnected():
			return struct{}{}, nil
		case nc.IsClosed():
			return struct{}{}, fmt.Errorf("%w: %v", errConnectionClosed, nc.LastError())
		case badCertificate(nc.LastError()):
			// A server certificate the client does not trust stays so however long it waits.
			return struct{}{}, fmt.Errorf("%w: %v", errConnectionClosed, nc.LastError())
		case nc.LastError() != nil:
			return struct{}{}, fmt.Errorf("not connected: %v", nc.LastError())
		}
		return struct{}{}, errors.New("not connected")
	})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redactedURL(m.Config.NATSURL), err)
	}
	return nil
}

// badCertificate says whether err is a TLS server certificate that does not verify.
func badCertificate(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

// redactedURL is u, a list of NATS URLs, without any user, password or token it carries: what
// lies between a URL's scheme (if any) and its last "@", whether or not the URL parses (a
// password may hold "#", "/" or "?").
func redactedURL(u string) string {
	var out []string
	for _, one := range strings.Split(u, ",") {
		one = strings.TrimSpace(one)
		if at := strings.LastIndex(one, "@"); at >= 0 {
			start := 0
			if i := strings.Index(one, "://"); i >= 0 && i < at {
				start = i + 3
			}
			one = one[:start] + one[at+1:]
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
