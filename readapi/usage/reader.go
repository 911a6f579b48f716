package usage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

const (
	// DefaultMaxKeys bounds the keys a Reader keeps counts of.
	DefaultMaxKeys = 16 << 10
	defaultWindow  = time.Hour

	// maxSkew is how far ahead of the reader's clock a report may be taken: a sender further
	// ahead does not share the clock (or the report is forged), and its report is ignored.
	maxSkew = time.Minute
	// warnEvery spaces the warnings about the table's bound and the window.
	warnEvery = time.Minute
)

// Config holds what Start needs; only Logger is required.
type Config struct {
	// Window is the key quota's window, as the read nodes are given it: counts older than that
	// leave the sums. One hour when zero; a whole number of seconds.
	Window time.Duration
	// Quota is the key quota reported until a read node reports its own: zero or negative, none.
	Quota int
	// MaxKeys bounds the keys whose counts are kept: DefaultMaxKeys when zero.
	MaxKeys int
	// Logger receives the warnings: a full table, read nodes counting another window.
	Logger *slog.Logger
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Window < 0:
		errs = append(errs, fmt.Errorf("usage: window %v is negative", c.Window))
	case c.Window%time.Second != 0:
		errs = append(errs, fmt.Errorf("usage: window %v is not a whole number of seconds", c.Window))
	}
	if c.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("usage: max keys %d is negative", c.MaxKeys))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("usage: config needs a logger"))
	}
	return errors.Join(errs...)
}

// Usage is one key's use of the read API over the last Window: the requests counted against its
// quota, and the 304s and 429s answered to it. Quota is the key quota, requests per Window; zero
// when there is none.
type Usage struct {
	Requests, NotModified, Limited int64
	Quota                          int
	Window                         time.Duration
}

// Reader sums the usage reports of every read node, per key, over the quota's window.
type Reader struct {
	window time.Duration
	logger *slog.Logger
	now    func() time.Time
	sub    *nats.Subscription

	mu           sync.Mutex
	table        table
	quota        int       // the key quota, as the last report named it
	warnedFull   time.Time // when the last warning about the table's bound was logged
	warnedWindow time.Time // when the last warning about another window was logged
}

// Start subscribes to the usage reports on nc, once for the process, and sums them until Close.
func Start(nc *nats.Conn, cfg Config) (*Reader, error) {
	r, err := newReader(cfg)
	if err != nil {
		return nil, err
	}
	if r.sub, err = nc.Subscribe(Subject, func(m *nats.Msg) { r.add(m.Data) }); err != nil {
		return nil, fmt.Errorf("usage: subscribe: %w", err)
	}
	return r, nil
}

func newReader(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Reader{
		window: cfg.Window,
		logger: cfg.Logger,
		now:    cfg.Now,
		quota:  max(cfg.Quota, 0),
	}
	if r.window == 0 {
		r.window = defaultWindow
	}
	if r.now == nil {
		r.now = time.Now
	}
	maxKeys := cfg.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	r.table = newTable(r.window, maxKeys)
	return r, nil
}

// Close ends the subscription; the counts held are still answered.
func (r *Reader) Close() error {
	return r.sub.Unsubscribe()
}

// add counts one report. A malformed report, one of an unknown version, one taken more than
// maxSkew ahead of this clock or one older than the window is ignored.
func (r *Reader) add(data []byte) {
	rep, err := Decode(data)
	if err != nil {
		r.logger.Debug("usage report ignored", "err", err)
		return
	}
	now := r.now()
	if rep.At.After(now.Add(maxSkew)) {
		r.logger.Debug("usage report ignored: taken ahead of this clock", "ahead", rep.At.Sub(now))
		return
	}
	at := rep.At
	if at.After(now) {
		at = now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	nb, b := r.table.bucket(now), r.table.bucket(at)
	r.quota = rep.Quota
	for k, c := range rep.Records() {
		r.table.add(k, b, nb, c)
	}
	r.warn(now, rep.Window)
}

// warn logs, at most once per warnEvery each, that the table's bound made it forget keys, and
// that read nodes count another window than this reader. r.mu is held.
func (r *Reader) warn(now time.Time, window time.Duration) {
	if r.table.evicted > 0 && now.Sub(r.warnedFull) >= warnEvery {
		r.logger.Warn("usage table full, keys forgotten with counts in the window: their use shows less than it was",
			"forgotten", r.table.evicted, "capacity", r.table.max)
		r.table.evicted, r.warnedFull = 0, now
	}
	if window != r.window && now.Sub(r.warnedWindow) >= warnEvery {
		r.logger.Warn("read nodes count the key quota over another window than the usage shown: give every role the same quota window",
			"nodes", window, "usage", r.window)
		r.warnedWindow = now
	}
}

// Of returns the use of the key whose SHA-256 is keyHash, in hex, as the establishment's state
// keeps it, over the window that ends now. An empty or malformed hash, no key, has no use.
func (r *Reader) Of(keyHash string) Usage {
	k, ok := parseKeyHash(keyHash)
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	u := Usage{Quota: r.quota, Window: r.window}
	if ok {
		c := r.table.sum(k, r.table.bucket(now))
		u.Requests, u.NotModified, u.Limited = c.Requests, c.NotModified, c.Limited
	}
	return u
}

// parseKeyHash returns the Key of a hex SHA-256: its first KeySize bytes.
func parseKeyHash(s string) (Key, bool) {
	var k Key
	var sum [sha256.Size]byte
	if len(s) != hex.EncodedLen(len(sum)) {
		return k, false
	}
	if _, err := hex.Decode(sum[:], []byte(s)); err != nil {
		return k, false
	}
	copy(k[:], sum[:])
	return k, true
}
