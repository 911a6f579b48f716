package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/events"
)

// Provisioning on a NATS cluster that may still be forming: no JetStream meta leader yet, or a
// stream's replicas not placed. A request made then can fail or go unanswered; it is made again.
const (
	provisionAttempt = 5 * time.Second        // bound of one attempt
	provisionBackoff = 250 * time.Millisecond // first wait between attempts, doubled up to provisionMaxWait
	provisionMaxWait = 2 * time.Second
	provisionReport  = 10 * time.Second // how often a process says what it is still waiting for
)

// ProvisionFunc is Provision as the packages that open what they use receive it.
type ProvisionFunc func(ctx context.Context, what string, open func(context.Context) error) error

// Provision runs open, which creates what names (a stream, a bucket) or binds to it, until it
// succeeds, fails for good, or ctx ends. Every process provisions what it uses: creation is
// idempotent, so processes started together on a new cluster all succeed, whichever comes
// first. While it waits, it says so in the log and to Config.Waiting (the read API's /readyz
// answers 503 with what it waits for). With the embedded server, which is ready once it accepts
// connections, one attempt is made.
func (n *Node) Provision(ctx context.Context, what string, open func(context.Context) error) error {
	if n.server != nil {
		return open(ctx)
	}
	log := n.cfg.Logger
	wait, reported := provisionBackoff, time.Time{}
	started := time.Now()
	for {
		attempt, cancel := context.WithTimeout(ctx, provisionAttempt)
		err := open(attempt)
		cancel()
		if err == nil {
			if !reported.IsZero() {
				log.Info("nats: provisioned after waiting", "what", what, "waited", time.Since(started).Round(time.Millisecond))
			}
			n.waiting("")
			return nil
		}
		if permanent(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		}
		n.waiting(what)
		if time.Since(reported) >= provisionReport {
			args := []any{"what", what, "waited", time.Since(started).Round(time.Second), "err", err}
			if hasCode(err, errCodeInsufficientResources) && time.Since(started) > time.Minute {
				args = append(args, "hint", "check --replicas against the number of the cluster's JetStream servers")
			}
			log.Warn("nats: waiting for JetStream", args...)
			reported = time.Now()
		}
		if events.Sleep(ctx, wait) != nil {
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		}
		wait = min(2*wait, provisionMaxWait)
	}
}

// waiting tells Config.Waiting what provisioning waits for.
func (n *Node) waiting(what string) {
	if n.cfg.Waiting != nil {
		n.cfg.Waiting(what)
	}
}

// Opened runs open under provision and returns what it opened.
func Opened[T any](ctx context.Context, provision ProvisionFunc, what string, open func(context.Context) (T, error)) (T, error) {
	var v T
	err := provision(ctx, what, func(ctx context.Context) error {
		var err error
		v, err = open(ctx)
		return err
	})
	return v, err
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

// hasCode says whether err is a JetStream API error of one of codes.
func hasCode(err error, codes ...jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return slices.Contains(codes, apiErr.ErrorCode)
}

// AwaitConnection returns once the shared connection is connected, or ctx ends, or it closed for
// good: a process started before its NATS servers waits for them, saying so as Provision does,
// with the connection's last error. The embedded server is connected from the start.
func (n *Node) AwaitConnection(ctx context.Context) error {
	if n.server != nil {
		return nil
	}
	nc := n.conn
	err := n.Provision(ctx, "the connection to NATS", func(context.Context) error {
		switch {
		case nc.IsConnected():
			return nil
		case nc.IsClosed():
			return fmt.Errorf("%w: %v", errConnectionClosed, nc.LastError())
		case badCertificate(nc.LastError()):
			// A server certificate the client does not trust stays so however long it waits.
			return fmt.Errorf("%w: %v", errConnectionClosed, nc.LastError())
		case nc.LastError() != nil:
			return fmt.Errorf("not connected: %v", nc.LastError())
		}
		return errors.New("not connected")
	})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redactedURL(n.cfg.URL), err)
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
