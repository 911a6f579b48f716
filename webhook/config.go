package webhook

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"
)

// Defaults of Config. The attempts and the window are the specification's; the rest are ours.
const (
	DefaultWindow        = 30 * time.Second
	DefaultMaxAttempts   = 5
	DefaultJitter        = 0.2
	DefaultTimeout       = 10 * time.Second
	DefaultMaxRetryAfter = time.Hour
	DefaultConcurrency   = 32
	DefaultLogRetention  = 30 * 24 * time.Hour
)

// MaxRotationGrace bounds the grace period of a secret rotation, during which the previous secret
// still signs.
const MaxRotationGrace = 30 * 24 * time.Hour

// Bounds checked by Config.Validate.
const (
	minWindow       = time.Second
	maxWindow       = time.Hour
	maxAttempts     = 20
	minTimeout      = 100 * time.Millisecond
	maxTimeout      = 2 * time.Minute
	maxBackoff      = 24 * time.Hour
	maxConcurrency  = 1024
	minLogRetention = time.Hour
	maxReplicas     = 5
)

// DefaultBackoff returns the default waits after a failed attempt: 10 s after the first, then
// 30 s, 2 min and 10 min, each varied by ±Jitter. Five attempts thus span about 13 minutes.
func DefaultBackoff() []time.Duration {
	return []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

// Config sets up a Dispatcher and its Registry. The zero value is valid and production-ready,
// except that it refuses every non-public receiver address.
type Config struct {
	// Window is the debounce window: the changes of one establishment within Window after its
	// first change are merged into one delivery. Zero means DefaultWindow; at least 1 s.
	Window time.Duration
	// MaxAttempts is how many times a delivery is tried before it is given up. Zero means
	// DefaultMaxAttempts; at most 20.
	MaxAttempts int
	// Backoff lists the waits after each failed attempt: Backoff[0] after the first, and so on;
	// the last one repeats when there are more attempts than entries. Empty means DefaultBackoff.
	// Entries must be positive and non-decreasing.
	Backoff []time.Duration
	// Jitter varies each wait by up to ±Jitter of itself, so that receivers recovering from an
	// outage are not hit by every retry at once. Zero means DefaultJitter; a negative value turns
	// jitter off; at most 0.5.
	Jitter float64
	// Timeout bounds each attempt: connecting, the TLS handshake, sending and the response
	// headers. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetryAfter caps the Retry-After a receiver may ask for with 429 or 503. A longer wait is
	// cut to MaxRetryAfter; a shorter one than the backoff is lengthened to the backoff. Zero
	// means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration

	// AllowPrivate lets receivers use any address, including loopback, private, link-local and
	// metadata addresses. For tests and local use only.
	AllowPrivate bool
	// AllowedNetworks lists networks allowed even though they are not public, for instance a
	// partner's private range or 127.0.0.1/32 in tests.
	AllowedNetworks []netip.Prefix
	// AllowHint ends the refusal of a receiver address that is not public: how the operator
	// allows one where the dispatcher is configured (a program's flags, say). Empty names
	// AllowPrivate and AllowedNetworks.
	AllowHint string
	// RootCAs, when set, replaces the system's certificate authorities for verifying receivers.
	RootCAs *x509.CertPool

	// Concurrency is how many deliveries one dispatcher attempts at a time. Zero means
	// DefaultConcurrency.
	Concurrency int
	// PlatformBatch and PlatformBatchBytes bound a platform delivery: its establishments and,
	// roughly, the bytes of its entries. Zero means DefaultPlatformBatch and
	// DefaultPlatformBatchBytes.
	PlatformBatch      int
	PlatformBatchBytes int
	// LogRetention is how long delivery records are kept. Zero means DefaultLogRetention; at
	// least one hour.
	LogRetention time.Duration
	// Replicas is the number of copies of the webhook stream and buckets in a cluster, 1 to 5;
	// zero means 1.
	Replicas int

	// MasterKeys encrypt the data keys of signing secrets; required. Every process of a
	// deployment has the same ones.
	MasterKeys *MasterKeys

	// OnAttempt, when set, is told the outcome of every delivery attempt the dispatcher makes:
	// delivered, retrying, failed, endpoint_gone or superseded.
	OnAttempt func(Status)

	// Logger receives failed attempts and unexpected errors; nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Validate reports every setting out of bounds.
func (c Config) Validate() error {
	var errs []error
	if c.MasterKeys == nil || len(c.MasterKeys.keys) == 0 {
		errs = append(errs, errors.New("no master key for signing secrets"))
	}
	if c.Window != 0 && (c.Window < minWindow || c.Window > maxWindow) {
		errs = append(errs, fmt.Errorf("window %s is outside %s to %s", c.Window, minWindow, maxWindow))
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > maxAttempts {
		errs = append(errs, fmt.Errorf("max attempts %d is outside 0 to %d", c.MaxAttempts, maxAttempts))
	}
	for i, b := range c.Backoff {
		switch {
		case b <= 0 || b > maxBackoff:
			errs = append(errs, fmt.Errorf("backoff[%d] %s is outside 0 to %s", i, b, maxBackoff))
		case i > 0 && b < c.Backoff[i-1]:
			errs = append(errs, fmt.Errorf("backoff[%d] %s is shorter than the wait before it", i, b))
		}
	}
	if c.Jitter > 0.5 {
		errs = append(errs, fmt.Errorf("jitter %g is above 0.5", c.Jitter))
	}
	if c.Timeout != 0 && (c.Timeout < minTimeout || c.Timeout > maxTimeout) {
		errs = append(errs, fmt.Errorf("timeout %s is outside %s to %s", c.Timeout, minTimeout, maxTimeout))
	}
	if c.MaxRetryAfter < 0 || c.MaxRetryAfter > maxBackoff {
		errs = append(errs, fmt.Errorf("max retry-after %s is outside 0 to %s", c.MaxRetryAfter, maxBackoff))
	}
	for i, p := range c.AllowedNetworks {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("allowed network %d is not a valid prefix", i))
		}
	}
	if c.Concurrency < 0 || c.Concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("concurrency %d is outside 0 to %d", c.Concurrency, maxConcurrency))
	}
	if c.LogRetention != 0 && c.LogRetention < minLogRetention {
		errs = append(errs, fmt.Errorf("log retention %s is below %s", c.LogRetention, minLogRetention))
	}
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("replicas %d is outside 0 to %d", c.Replicas, maxReplicas))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("webhook config: %w", err)
	}
	return nil
}

// withDefaults returns c with every zero setting replaced by its default.
func (c Config) withDefaults() Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if len(c.Backoff) == 0 {
		c.Backoff = DefaultBackoff()
	} else {
		c.Backoff = append([]time.Duration(nil), c.Backoff...)
	}
	switch {
	case c.Jitter == 0:
		c.Jitter = DefaultJitter
	case c.Jitter < 0:
		c.Jitter = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.PlatformBatch <= 0 {
		c.PlatformBatch = DefaultPlatformBatch
	}
	if c.PlatformBatchBytes <= 0 {
		c.PlatformBatchBytes = DefaultPlatformBatchBytes
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.LogRetention == 0 {
		c.LogRetention = DefaultLogRetention
	}
	c.Replicas = max(c.Replicas, 1)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.AllowedNetworks = append([]netip.Prefix(nil), c.AllowedNetworks...)
	return c
}

// backoff returns the wait after failed attempt n (1-based), before jitter.
func (c Config) backoff(n int) time.Duration {
	if len(c.Backoff) == 0 {
		return 0
	}
	return c.Backoff[min(max(n, 1), len(c.Backoff))-1]
}
