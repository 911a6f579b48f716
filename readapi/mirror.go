package readapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// ErrWatchStopped is returned by Mirror.Run when the KV watcher ends while its context is still
// live, for instance because the NATS connection was closed.
var ErrWatchStopped = errors.New("readapi: kv watcher stopped")

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
type Mirror struct {
	kv jetstream.KeyValue
	// rewatch asks Run to start its watch again (see Rewatch).
	rewatch chan struct{}
	logger  *slog.Logger

	// index maps a slug to its slot, in indexShards maps by a hash of the slug. A published map
	// is never written again: adding a slug publishes a copy of its shard, a few hundredths of
	// the establishments, not of all of them. Updates and deletes of a known slug only store
	// into its slot.
	index   [indexShards]atomic.Pointer[map[string]*slot]
	applied atomic.Uint64 // bucket revision of the last entry whose effect is visible

	// What the current entries hold, for Stats; written by the watcher goroutine only.
	establishments, documentBytes, heldBytes atomic.Int64

	ready   chan struct{} // closed once the initial values are visible
	running atomic.Bool
	mu      sync.Mutex
	changed chan struct{} // closed and replaced after each visible change; guarded by mu

	// Watcher goroutine only: the initial values are gathered in pending and published at once.
	caughtUp   bool
	pending    map[string]*slot
	pendingRev uint64
}

// indexShards is the number of maps the index is split into; a power of two.
const indexShards = 256

// shardOf returns the index shard of slug.
func shardOf(slug string) int { return int(xxhash.Sum64String(slug) & (indexShards - 1)) }

// slot holds the current entry of one establishment; nil after a delete.
type slot struct {
	current atomic.Pointer[served]
	// held is the highest content_revision applied to this slug, kept across deletes so that
	// the mirror never goes back. Watcher goroutine only.
	held int64
}

// NewMirror returns a mirror of the bundles in kv, the dockey.Bucket bucket. It stays empty until
// Run is called.
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
		kv:      kv,
		rewatch: make(chan struct{}, 1),
		logger:  logger,
		ready:   make(chan struct{}),
		changed: make(chan struct{}),
		pending: make(map[string]*slot),
	}
	for i := range m.index {
		m.index[i].Store(&map[string]*slot{})
	}
	return m, nil
}

// Run watches the bucket and applies every bundle to the mirror until ctx is done, then returns
// nil. It returns an error when the watch cannot start and ErrWatchStopped when the watcher ends
// on its own. Run may be called once.
func (m *Mirror) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("readapi: mirror is already running")
	}
	// Each watch has a context of its own, ended when it is replaced: the client keeps a goroutine
	// per watch until its context ends.
	wctx, stopWatch := context.WithCancel(ctx)
	w, err := m.kv.Watch(wctx, dockey.Watch)
	if err != nil {
		stopWatch()
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("readapi: watch %s: %w", dockey.Watch, err)
	}
	defer func() { stopWatch(); _ = w.Stop() }() // already stopped when ctx ended
	failures := 0
	// The watcher closes Updates once ctx is done; draining until then keeps its delivery
	// goroutine from blocking on a full channel.
	for {
		select {
		case kve, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return ErrWatchStopped
			}
			if ctx.Err() != nil {
				continue
			}
			m.apply(kve)
		case <-m.rewatch:
			if ctx.Err() != nil {
				continue
			}
			// From the revision after the last handled: the mirror skips what it has already.
			from := max(m.applied.Load(), m.pendingRev) + 1
			nctx, stopNew := context.WithCancel(ctx)
			nw, err := m.kv.Watch(nctx, dockey.Watch, jetstream.ResumeFromRevision(from))
			if err != nil {
				stopNew()
				if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrStreamNotFound) {
					m.logger.Error("bundle mirror: the bucket is gone; serving what it holds", "err", err)
					continue
				}
				// The server may not serve JetStream yet: again in a second, the current watch
				// kept meanwhile.
				if failures++; failures%30 == 1 {
					m.logger.Warn("bundle mirror: watch not restarted yet, trying every second", "from_revision", from, "err", err)
				}
				time.AfterFunc(time.Second, m.Rewatch)
				continue
			}
			failures = 0
			old, stopOld := w, stopWatch
			w, stopWatch = nw, stopNew
			_ = old.Stop()
			stopOld()
			go drainWatch(old)
		}
	}
}

// Applied returns the bucket revision up to which the mirror has handled every bundle write.
func (m *Mirror) Applied() uint64 { return m.applied.Load() }

// Rewatch makes Run start its watch again from the revision after the last it handled. Called
// when the connection came back: a watch whose consumer was lost with its server would otherwise
// resume only once the client noticed the missing heartbeats, a quarter of a minute later, the
// mirror serving what it held meanwhile.
func (m *Mirror) Rewatch() {
	select {
	case m.rewatch <- struct{}{}:
	default: // one is pending already
	}
}

// drainWatch reads what a stopped watcher still delivers, so that its delivery goroutine never
// blocks, for at most a few seconds.
func drainWatch(w jetstream.KeyWatcher) {
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

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

// WaitBucketRevision blocks until the mirror has handled every bundle key write up to the bucket
// revision rev (the value returned by a KV Put), whether it applied or skipped them, or ctx is
// done. rev must be the revision of a write under a bundle key: other keys are not watched.
func (m *Mirror) WaitBucketRevision(ctx context.Context, rev uint64) error {
	return m.wait(ctx, func() bool { return m.applied.Load() >= rev },
		func() error { return fmt.Errorf("readapi: wait for bucket revision %d", rev) })
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

// lookup returns the current entry of slug, or nil.
func (m *Mirror) lookup(slug string) *served {
	s := (*m.index[shardOf(slug)].Load())[slug]
	if s == nil {
		return nil
	}
	return s.current.Load()
}

// apply handles one watcher delivery: a nil entry marks the end of the initial values.
func (m *Mirror) apply(kve jetstream.KeyValueEntry) {
	if kve == nil {
		m.catchUp()
		return
	}
	rev := kve.Revision()
	m.handle(kve)
	if !m.caughtUp {
		// Made visible, with every initial value, by catchUp.
		m.pendingRev = max(m.pendingRev, rev)
		return
	}
	m.applied.Store(rev)
	m.notify()
}

// catchUp publishes the initial values at once and marks the mirror ready.
func (m *Mirror) catchUp() {
	if m.caughtUp {
		return
	}
	m.caughtUp = true
	var shards [indexShards]map[string]*slot
	for i := range shards {
		shards[i] = make(map[string]*slot, len(m.pending)/indexShards)
	}
	for slug, s := range m.pending {
		shards[shardOf(slug)][slug] = s
	}
	for i := range shards {
		m.index[i].Store(&shards[i])
	}
	established := len(m.pending)
	m.pending = nil
	m.applied.Store(m.pendingRev)
	close(m.ready)
	m.notify()
	m.logger.Info("bundle mirror caught up", "establishments", established)
}

func (m *Mirror) handle(kve jetstream.KeyValueEntry) {
	key, rev := kve.Key(), kve.Revision()
	slug, ok := dockey.SlugOf(key)
	if !ok || !validSlug(slug) {
		m.logger.Warn("skip bundle under an invalid key", "key", key, "bucket_revision", rev)
		return
	}
	s := m.slot(slug)
	if kve.Operation() != jetstream.KeyValuePut {
		if s != nil && s.current.Load() != nil {
			m.swap(s, nil)
			m.logger.Info("bundle removed", "slug", slug, "bucket_revision", rev)
		}
		return
	}
	e, err := decodeServed(slug, kve.Value())
	if err != nil {
		m.logger.Warn("skip invalid bundle", "slug", slug, "bucket_revision", rev, "err", err)
		return
	}
	if s == nil {
		s = &slot{held: e.revision}
		m.swap(s, e)
		m.addSlot(slug, s)
		return
	}
	if e.revision < s.held {
		m.logger.Warn("skip bundle older than the one held", "slug", slug,
			"content_revision", e.revision, "held", s.held, "bucket_revision", rev)
		return
	}
	s.held = e.revision
	m.swap(s, e)
}

// swap makes e, nil for none, the current entry of s; for the watcher goroutine.
func (m *Mirror) swap(s *slot, e *served) {
	if old := s.current.Swap(e); old != nil {
		m.establishments.Add(-1)
		m.documentBytes.Add(-int64(old.documentBytes()))
		m.heldBytes.Add(-int64(old.size))
	}
	if e != nil {
		m.establishments.Add(1)
		m.documentBytes.Add(int64(e.documentBytes()))
		m.heldBytes.Add(int64(e.size))
	}
}

// MirrorStats describes what a mirror holds.
type MirrorStats struct {
	// Establishments counts the bundles held, initial values still loading included.
	Establishments int64 `json:"establishments"`
	// DocumentBytes is the size of every body and gzip coding held: what the bucket's bundles
	// carry as documents.
	DocumentBytes int64 `json:"document_bytes"`
	// HeldBytes is the size of the arrays the bundles are held in: the documents, their
	// entity tags and header values, and their locations.
	HeldBytes int64 `json:"held_bytes"`
}

// Stats returns what the mirror holds now.
func (m *Mirror) Stats() MirrorStats {
	return MirrorStats{
		Establishments: m.establishments.Load(),
		DocumentBytes:  m.documentBytes.Load(),
		HeldBytes:      m.heldBytes.Load(),
	}
}

// slot returns the slot of slug, or nil; for the watcher goroutine.
func (m *Mirror) slot(slug string) *slot {
	if !m.caughtUp {
		return m.pending[slug]
	}
	return (*m.index[shardOf(slug)].Load())[slug]
}

// addSlot adds a slug: in place while the initial values load (nothing is published yet), by
// publishing a copy of its shard afterwards, so that a published map is never written.
func (m *Mirror) addSlot(slug string, s *slot) {
	if !m.caughtUp {
		m.pending[slug] = s
		return
	}
	shard := &m.index[shardOf(slug)]
	next := make(map[string]*slot, len(*shard.Load())+1)
	maps.Copy(next, *shard.Load())
	next[slug] = s
	shard.Store(&next)
}

// notify wakes every waiter.
func (m *Mirror) notify() {
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}
