package readapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// documentSource is what the handlers need from the mirror: the current entry of a slug, or nil.
type documentSource interface {
	lookup(slug string) *served
}

// Mirror is an in-memory copy of the dockey bucket, kept current by a KV watcher. Each stored
// bundle is decoded once, when it arrives, into an immutable entry; requests read entries without
// locks, allocation or network.
//
// One establishment is switched to a new bundle in a single atomic store, so a reader sees all of
// its documents at one revision, and the mirror never goes back to a lower content_revision than
// one it has served. An undecodable or invalid value is logged and skipped: the previous bundle of
// that establishment stays in service.
//
// The bundle of an establishment's day ahead (dockey.AheadKey) is held beside its current one
// and served in its place from the instant that day starts, by the mirror's clock (SetClock), so
// that a day change is served at midnight however long its projection takes; see lookup.
//
// A mirror can move to another generation of the bucket, one a rebuild made: Prepare loads it
// beside the one served, and Switch serves it, every establishment at once, as soon as it holds
// every write up to a given revision.
type Mirror struct {
	// cur is the generation served; written by the watcher goroutine only.
	cur atomic.Pointer[view]
	// rewatch asks Run to start its watches again (see Rewatch); requested says that request
	// holds the last call of Prepare, Switch or Abandon, for Run to act on.
	rewatch   chan struct{}
	requested chan struct{}
	request   atomic.Pointer[generationRequest]
	asked     atomic.Uint64 // requests made
	logger    *slog.Logger

	ready   chan struct{} // closed once the initial values of the first generation are visible
	running atomic.Bool
	mu      sync.Mutex
	changed chan struct{} // closed and replaced after each visible change; guarded by mu

	// next is the generation being prepared, for Stats; written by the watcher goroutine only.
	next atomic.Pointer[view]
	// now is the clock of days ahead, in Unix seconds (SetClock).
	now func() int64
}

// NewMirror returns a mirror of the bundles in kv, the dockey.Bucket bucket or a later generation
// of it. It stays empty until Run is called.
func NewMirror(kv jetstream.KeyValue, logger *slog.Logger) (*Mirror, error) {
	var errs []error
	if kv == nil {
		errs = append(errs, errors.New("readapi: mirror needs a key-value bucket"))
	}
	if logger == nil {
		errs = append(errs, errors.New("readapi: mirror needs a logger"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m := &Mirror{
		rewatch:   make(chan struct{}, 1),
		requested: make(chan struct{}, 1),
		logger:    logger,
		ready:     make(chan struct{}),
		changed:   make(chan struct{}),
		now:       wallClock,
	}
	m.cur.Store(newView(kv))
	return m, nil
}

// Bucket returns the generation of the bucket served.
func (m *Mirror) Bucket() jetstream.KeyValue { return m.cur.Load().kv }

// Applied returns the bucket revision up to which the mirror has handled every bundle write.
func (m *Mirror) Applied() uint64 { return m.cur.Load().applied.Load() }

// Ready returns a channel closed once the mirror holds every bundle that was in the bucket when
// Run started. Until then lookups find nothing: a server should not take traffic before.
func (m *Mirror) Ready() <-chan struct{} { return m.ready }

// WaitRevision blocks until the establishment slug is served at content_revision rev or later,
// or ctx is done.
func (m *Mirror) WaitRevision(ctx context.Context, slug string, rev int64) error {
	return m.wait(ctx, func() bool {
		e := m.lookup(slug)
		return e != nil && e.revision >= rev
	}, func() error { return fmt.Errorf("readapi: wait for %s at revision %d", slug, rev) })
}

// WaitBucketRevision blocks until the mirror has handled every write to its bucket up to the
// bucket revision rev (the value returned by a KV Put to the generation Bucket returns), whether
// it applied or skipped them, or until it serves another generation, or ctx is done.
func (m *Mirror) WaitBucketRevision(ctx context.Context, rev uint64) error {
	v := m.cur.Load()
	return m.wait(ctx, func() bool { return m.cur.Load() != v || v.applied.Load() >= rev },
		func() error { return fmt.Errorf("readapi: wait for bucket revision %d", rev) })
}

// WaitServing blocks until the mirror serves the generation bucket and has handled every write
// to it up to the bucket revision rev, or serves a later generation, or ctx is done.
func (m *Mirror) WaitServing(ctx context.Context, bucket string, rev uint64) error {
	want := dockey.GenerationOf(bucket)
	return m.wait(ctx, func() bool {
		v := m.cur.Load()
		b := v.kv.Bucket()
		return b == bucket && v.applied.Load() >= rev || dockey.GenerationOf(b) > want
	}, func() error { return fmt.Errorf("readapi: wait for %s at bucket revision %d", bucket, rev) })
}

// wait blocks until done reports true or ctx ends. The change channel is taken before done is
// evaluated, so a change that lands in between still wakes the loop.
func (m *Mirror) wait(ctx context.Context, done func() bool, describe func() error) error {
	for {
		m.mu.Lock()
		changed := m.changed
		m.mu.Unlock()
		if done() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", describe(), context.Cause(ctx))
		}
	}
}

// lookup returns the entry served for slug, or nil: the current one, or from its start the one of
// its day ahead, as long as the current entry is the one that day was rendered beside. The day
// ahead is served from its midnight whatever the projection of the day's start is doing, and
// an entry stored since in its place (that day's, or a later change) takes over as it arrives.
func (m *Mirror) lookup(slug string) *served {
	s := (*m.cur.Load().index[shardOf(slug)].Load())[slug]
	if s == nil {
		return nil
	}
	e := s.current.Load()
	if a := s.ahead.Load(); a != nil && e != nil && a.base == e.revision && m.now() >= a.starts {
		return a
	}
	return e
}

// SetClock makes now, which returns Unix seconds, the clock that decides when a day ahead is
// served, in place of the wall clock; it must be called before Run.
func (m *Mirror) SetClock(now func() int64) { m.now = now }

// wallClock is the clock of a mirror by default.
func wallClock() int64 { return time.Now().Unix() }

// MirrorStats describes what a mirror holds.
type MirrorStats struct {
	// Establishments counts the bundles held, initial values still loading included.
	Establishments int64 `json:"establishments"`
	// DocumentBytes is the size of every body and gzip coding the bundles held carry, each
	// counted whether or not it equals another.
	DocumentBytes int64 `json:"document_bytes"`
	// HeldBytes is the size of the arrays the bundles are held in: the stored values, or what
	// was moved out of those of the JSON form, with their header values. A document equal to
	// another of its bundle (the same in two languages) is held once, so it may be less than
	// DocumentBytes.
	HeldBytes int64 `json:"held_bytes"`
	// Bucket names the generation of the bucket served.
	Bucket string `json:"bucket"`
	// Next describes the generation being loaded beside it, while a rebuild prepares one.
	Next *MirrorStats `json:"next,omitempty"`
}

// Stats returns what the mirror holds now, its figures those of the generation served.
func (m *Mirror) Stats() MirrorStats {
	st := m.cur.Load().stats()
	if next := m.next.Load(); next != nil {
		ns := next.stats()
		st.Next = &ns
	}
	return st
}

// notify wakes every waiter.
func (m *Mirror) notify() {
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}
