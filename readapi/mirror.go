package readapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go"
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
}

// view is one generation of the bucket as the mirror holds it.
type view struct {
	kv jetstream.KeyValue
	// index maps a slug to its slot, in indexShards maps by a hash of the slug. A published map
	// is never written again: adding a slug publishes a copy of its shard, one establishment in
	// indexShards, not of all of them. Updates and deletes of a known slug only store into its
	// slot.
	index   [indexShards]atomic.Pointer[map[string]*slot]
	applied atomic.Uint64 // bucket revision of the last entry whose effect is visible

	// What the current entries hold, for Stats; written by the watcher goroutine only.
	establishments, documentBytes, heldBytes atomic.Int64

	// Watcher goroutine only: the initial values are gathered in pending and published at once.
	caughtUp   bool
	pending    map[string]*slot
	pendingRev uint64
}

func newView(kv jetstream.KeyValue) *view {
	v := &view{kv: kv, pending: make(map[string]*slot)}
	for i := range v.index {
		v.index[i].Store(&map[string]*slot{})
	}
	return v
}

// generationRequest is a call of Prepare (rev 0, switchNow false), Switch or Abandon (kv nil).
type generationRequest struct {
	kv        jetstream.KeyValue
	switchNow bool
	rev       uint64
	seq       uint64 // its number among the requests made
}

// indexShards is the number of maps the index is split into; a power of two. An establishment
// added after catch-up costs a copy of its shard: about 25 entries at 100,000 establishments,
// 250 at a million (256 shards spent 3 % of an import's CPU copying them at 100,000). Each
// shard costs an empty map when the view is made, 200 KB in all.
const indexShards = 4096

// shardOf returns the index shard of slug.
func shardOf(slug string) int { return int(xxhash.Sum64String(slug) & (indexShards - 1)) }

// slot holds the current entry of one establishment; nil after a delete.
type slot struct {
	current atomic.Pointer[served]
	// held is the highest content_revision applied to this slug, kept across deletes so that
	// the mirror never goes back. Watcher goroutine only.
	held int64
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
	}
	m.cur.Store(newView(kv))
	return m, nil
}

// watching is a view and the watch that fills it.
type watching struct {
	v       *view
	w       jetstream.KeyWatcher
	updates <-chan delivery // the watch's deliveries, their bundles decoded
	stop    context.CancelFunc
}

// watch starts a watch of v's bucket from revision from (1 for every value), with a context of
// its own, ended when it is replaced: the client keeps a goroutine per watch until its context
// ends.
func watch(ctx context.Context, v *view, from uint64) (*watching, error) {
	wctx, stop := context.WithCancel(ctx)
	var opts []jetstream.WatchOpt
	if from > 1 {
		opts = append(opts, jetstream.ResumeFromRevision(from))
	}
	w, err := v.kv.Watch(wctx, dockey.Watch, opts...)
	if err != nil {
		stop()
		return nil, err
	}
	return &watching{v: v, w: w, updates: decodeAhead(wctx, w.Updates(), runtime.GOMAXPROCS(0)), stop: stop}, nil
}

// end stops the watch; what it still delivers is read and dropped in the background.
func (w *watching) end() {
	_ = w.w.Stop()
	w.stop()
}

// delivery is one delivery of a watch: an entry, nil at the end of the initial values, and for a
// stored bundle under a valid key, its slug and its entry decoded, or why it cannot be.
type delivery struct {
	kve  jetstream.KeyValueEntry
	slug string // "" for a key that names no valid slug
	e    *served
	err  error
}

// decodeDepth bounds the deliveries a watch decodes ahead of the mirror.
const decodeDepth = 64

// decodeAhead passes on what in delivers, in the same order, with every bundle decoded by one of
// workers goroutines: decoding is nearly all of a mirror's work while it loads a bucket, and
// would otherwise use one CPU. The returned channel closes after in closes. Once ctx is done,
// what in still delivers is read and dropped, so that the watcher's goroutine never blocks.
func decodeAhead(ctx context.Context, in <-chan jetstream.KeyValueEntry, workers int) <-chan delivery {
	type job struct {
		kve  jetstream.KeyValueEntry
		slug string
		done chan<- delivery
	}
	out := make(chan delivery, decodeDepth)
	jobs := make(chan job, decodeDepth)
	order := make(chan chan delivery, decodeDepth) // each delivery's result, in delivery order
	for range max(workers, 1) {
		go func() {
			var dec decoder
			for j := range jobs {
				d := delivery{kve: j.kve, slug: j.slug}
				if ctx.Err() == nil { // else dropped: not worth decoding
					d.e, d.err = dec.decode(j.slug, j.kve.Value())
				}
				j.done <- d
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for kve := range in {
			done := make(chan delivery, 1)
			order <- done
			d := delivery{kve: kve}
			if kve != nil {
				if slug, ok := dockey.SlugOf(kve.Key()); ok && validSlug(slug) {
					d.slug = slug
				}
			}
			if d.slug == "" || kve.Operation() != jetstream.KeyValuePut {
				done <- d
				continue
			}
			jobs <- job{kve: kve, slug: d.slug, done: done}
		}
	}()
	go func() {
		defer close(out)
		for done := range order {
			select {
			case out <- <-done:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// Run watches the bucket and applies every bundle to the mirror until ctx is done, then returns
// nil. It returns an error when the watch cannot start. A watch that ends on its own (the
// connection closed, the server gone) is started again every second from the revision after the
// last one applied, while what the mirror holds goes on being served. One Run at a time; a Run
// that returned may be called again.
func (m *Mirror) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("readapi: mirror is already running")
	}
	defer m.running.Store(false) // a Run that could not start its watch may be started again
	cur, err := watch(ctx, m.cur.Load(), 1)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("readapi: watch %s: %w", dockey.Watch, err)
	}
	var (
		next      *watching // the generation prepared, if any
		switchAt  uint64    // with switching, the revision of next to hold before serving it
		switching bool
	)
	defer func() {
		cur.end() // already stopped when ctx ended
		if next != nil {
			next.end()
		}
	}()
	failures, nextFailures := 0, 0
	// Once ctx is done, Run reads on until the watch's channel closes, which it does once the
	// watcher has closed its own; without a watch (it ended, or the generation served is gone),
	// it returns at once.
	curUpdates := cur.updates // nil while there is no watch of the generation served
	for {
		var nextUpdates <-chan delivery
		if next != nil {
			nextUpdates = next.updates
		}
		var done <-chan struct{}
		if curUpdates == nil {
			done = ctx.Done()
		}
		select {
		case <-done:
			return nil
		case d, ok := <-curUpdates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				if next == nil || !m.gone(ctx, cur.v.kv) {
					// Reads never stop: what the mirror holds is served while it watches again.
					m.logger.Warn("bundle mirror: the watch ended; serving what it holds while it watches again", "bucket", cur.v.kv.Bucket())
					curUpdates = nil
					m.Rewatch()
					continue
				}
				// The generation served was removed after a switch this node has yet to make:
				// what it holds is served until then.
				m.logger.Warn("bundle mirror: the generation served is gone; serving what it holds until the next one is ready", "bucket", cur.v.kv.Bucket())
				curUpdates = nil
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			m.apply(cur.v, d, true)
		case d, ok := <-nextUpdates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				m.logger.Warn("bundle mirror: the watch of the next generation ended; it is prepared again", "bucket", next.v.kv.Bucket())
				kv := next.v.kv
				next.end()
				next = nil
				m.next.Store(nil)
				m.askAgain(generationRequest{kv: kv, switchNow: switching, rev: switchAt, seq: m.asked.Load()})
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			m.apply(next.v, d, false)
		case <-m.requested:
			req := m.request.Swap(nil)
			if ctx.Err() != nil || req == nil {
				continue
			}
			if req.kv == nil || req.kv.Bucket() == cur.v.kv.Bucket() {
				// Abandoned, or the generation served already.
				if next != nil {
					next.end()
					next = nil
					m.next.Store(nil)
				}
				switching = false
				continue
			}
			if next == nil || next.v.kv.Bucket() != req.kv.Bucket() {
				if next != nil {
					next.end()
				}
				switching, switchAt = false, 0 // nothing asked yet of this generation
				nw, err := watch(ctx, newView(req.kv), 1)
				if err != nil {
					next = nil
					m.next.Store(nil)
					if bucketGone(err) {
						m.logger.Warn("bundle mirror: the next generation is gone; not loaded", "bucket", req.kv.Bucket())
						continue
					}
					if nextFailures++; nextFailures%30 == 1 {
						m.logger.Warn("bundle mirror: the next generation cannot be watched yet, trying every second", "bucket", req.kv.Bucket(), "err", err)
					}
					m.askAgain(*req)
					continue
				}
				nextFailures = 0
				next = nw
				m.next.Store(nw.v)
				m.logger.Info("bundle mirror: loading the next generation", "bucket", req.kv.Bucket())
			}
			if req.switchNow {
				switching, switchAt = true, req.rev
			}
		case <-m.rewatch:
			if ctx.Err() != nil {
				continue
			}
			// Each watch from the revision after the last it handled: the mirror skips what it
			// has already. The two independently: either bucket may be gone.
			again := false
			if nw, err := watch(ctx, cur.v, max(cur.v.applied.Load(), cur.v.pendingRev)+1); err == nil {
				failures = 0
				cur.end()
				cur, curUpdates = nw, nw.updates
			} else if bucketGone(err) && next != nil {
				// Removed after a switch to the next generation, which this node has yet to make.
				m.logger.Error("bundle mirror: the bucket is gone; serving what it holds", "err", err)
			} else {
				// The server may not serve JetStream yet, or be loading its streams again (a
				// restart, room made on its volume): again in a second, what is held served
				// meanwhile.
				if failures++; failures%30 == 1 {
					m.logger.Warn("bundle mirror: watch not restarted yet, trying every second", "err", err)
				}
				again = true
			}
			if next != nil {
				if nn, err := watch(ctx, next.v, max(next.v.applied.Load(), next.v.pendingRev)+1); err == nil {
					next.end()
					next = nn
				} else if !bucketGone(err) {
					again = true
				}
			}
			if again {
				time.AfterFunc(time.Second, m.Rewatch)
			}
		}
		if switching && next != nil && next.v.caughtUp && next.v.applied.Load() >= switchAt {
			m.switchTo(cur.v, next.v)
			cur.end()
			cur, next, switching, switchAt = next, nil, false, 0
			curUpdates = cur.updates
		}
	}
}

// gone says whether the bucket kv no longer exists.
func (m *Mirror) gone(ctx context.Context, kv jetstream.KeyValue) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := kv.Status(ctx)
	return bucketGone(err)
}

// bucketGone says err reports a bucket that no longer exists.
func bucketGone(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrStreamNotFound)
}

// Prepare starts loading kv, a later generation of the bucket, beside the one served.
func (m *Mirror) Prepare(kv jetstream.KeyValue) { m.ask(generationRequest{kv: kv}) }

// Switch serves kv, a later generation of the bucket, in place of the one served, as soon as the
// mirror holds every write to it up to revision rev: every establishment at once, none at a lower
// content_revision than it had (one that would go back keeps its entry, and its held revision).
func (m *Mirror) Switch(kv jetstream.KeyValue, rev uint64) {
	m.ask(generationRequest{kv: kv, switchNow: true, rev: rev})
}

// Abandon drops the generation prepared, if any.
func (m *Mirror) Abandon() { m.ask(generationRequest{}) }

// askAgain asks r again in a second, unless another request was made since r.
func (m *Mirror) askAgain(r generationRequest) {
	time.AfterFunc(time.Second, func() {
		if m.asked.Load() == r.seq {
			m.ask(r)
		}
	})
}

// ask passes r to Run, in place of any request it has not acted on yet: only the last counts.
func (m *Mirror) ask(r generationRequest) {
	r.seq = m.asked.Add(1)
	if m.request.Swap(&r) == nil {
		select {
		case m.requested <- struct{}{}:
		default:
		}
	}
}

// Bucket returns the generation of the bucket served.
func (m *Mirror) Bucket() jetstream.KeyValue { return m.cur.Load().kv }

// switchTo makes next, caught up, the view served in place of cur; for the watcher goroutine.
func (m *Mirror) switchTo(cur, next *view) {
	kept, gone := 0, 0
	for i := range next.index {
		for slug, s := range *next.index[i].Load() {
			old := (*cur.index[i].Load())[slug]
			if old == nil || old.held <= s.held {
				continue
			}
			// The new generation is behind what was served: the served entry stays until it
			// catches up.
			kept++
			s.held = old.held
			next.swap(s, old.current.Load())
		}
	}
	for i := range cur.index {
		for slug, s := range *cur.index[i].Load() {
			if (*next.index[i].Load())[slug] != nil {
				continue
			}
			// Not in the new generation: no longer served, its revision still held, so that a
			// bundle of it stored later is never older than what was served.
			if s.current.Load() != nil {
				gone++
			}
			next.addSlot(slug, &slot{held: s.held})
		}
	}
	m.next.Store(nil)
	m.cur.Store(next)
	select {
	case <-m.ready:
	default:
		close(m.ready) // switched before the first generation was loaded: the next one is
	}
	m.notify()
	m.logger.Info("bundle mirror: serving the next generation", "bucket", next.kv.Bucket(),
		"establishments", next.establishments.Load(), "was", cur.kv.Bucket())
	if kept > 0 || gone > 0 {
		m.logger.Warn("bundle mirror: the next generation is behind the one served", "kept_entries", kept, "establishments_gone", gone)
	}
}

// Applied returns the bucket revision up to which the mirror has handled every bundle write.
func (m *Mirror) Applied() uint64 { return m.cur.Load().applied.Load() }

// Rewatch makes Run start its watches again from the revision after the last each handled. Called
// when the connection came back: a watch whose consumer was lost with its server would otherwise
// resume only once the client noticed the missing heartbeats, a quarter of a minute later, the
// mirror serving what it held meanwhile.
func (m *Mirror) Rewatch() {
	select {
	case m.rewatch <- struct{}{}:
	default: // one is pending already
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
// revision rev (the value returned by a KV Put to the generation Bucket returns), whether it
// applied or skipped them, or until it serves another generation, or ctx is done. rev must be the
// revision of a write under a bundle key: other keys are not watched.
func (m *Mirror) WaitBucketRevision(ctx context.Context, rev uint64) error {
	v := m.cur.Load()
	return m.wait(ctx, func() bool { return m.cur.Load() != v || v.applied.Load() >= rev },
		func() error { return fmt.Errorf("readapi: wait for bucket revision %d", rev) })
}

// WaitServing blocks until the mirror serves the generation bucket and has handled every bundle
// key write to it up to the bucket revision rev, or serves a later generation, or ctx is done.
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

// lookup returns the current entry of slug, or nil.
func (m *Mirror) lookup(slug string) *served {
	s := (*m.cur.Load().index[shardOf(slug)].Load())[slug]
	if s == nil {
		return nil
	}
	return s.current.Load()
}

// apply handles one watcher delivery to v: a nil entry marks the end of the initial values. served
// says v is the view served, whose changes wake waiters.
func (m *Mirror) apply(v *view, d delivery, served bool) {
	if d.kve == nil {
		if !v.caughtUp {
			m.catchUp(v, served)
		}
		return
	}
	rev := d.kve.Revision()
	m.handle(v, d)
	if !v.caughtUp {
		// Made visible, with every initial value, by catchUp.
		v.pendingRev = max(v.pendingRev, rev)
		return
	}
	v.applied.Store(rev)
	if served {
		m.notify()
	}
}

// catchUp publishes the initial values of v at once; the view served first marks the mirror
// ready.
func (m *Mirror) catchUp(v *view, served bool) {
	v.caughtUp = true
	var shards [indexShards]map[string]*slot
	for i := range shards {
		shards[i] = make(map[string]*slot, len(v.pending)/indexShards)
	}
	for slug, s := range v.pending {
		shards[shardOf(slug)][slug] = s
	}
	for i := range shards {
		v.index[i].Store(&shards[i])
	}
	established := len(v.pending)
	v.pending = nil
	v.applied.Store(v.pendingRev)
	if served {
		select {
		case <-m.ready:
		default:
			close(m.ready)
		}
		m.notify()
	}
	m.logger.Info("bundle mirror caught up", "establishments", established, "bucket", v.kv.Bucket())
}

func (m *Mirror) handle(v *view, d delivery) {
	kve, slug := d.kve, d.slug
	rev := kve.Revision()
	if slug == "" {
		m.logger.Warn("skip bundle under an invalid key", "key", kve.Key(), "bucket_revision", rev)
		return
	}
	s := v.slot(slug)
	if kve.Operation() != jetstream.KeyValuePut {
		if s != nil && s.current.Load() != nil {
			v.swap(s, nil)
			m.logger.Info("bundle removed", "slug", slug, "bucket_revision", rev)
		}
		return
	}
	e, err := d.e, d.err
	if err != nil {
		m.logger.Warn("skip invalid bundle", "slug", slug, "bucket_revision", rev, "err", err)
		return
	}
	if s == nil {
		s = &slot{held: e.revision}
		v.swap(s, e)
		v.addSlot(slug, s)
		return
	}
	if e.revision < s.held {
		m.logger.Warn("skip bundle older than the one held", "slug", slug,
			"content_revision", e.revision, "held", s.held, "bucket_revision", rev)
		return
	}
	s.held = e.revision
	v.swap(s, e)
}

// swap makes e, nil for none, the current entry of s; for the watcher goroutine.
func (v *view) swap(s *slot, e *served) {
	if old := s.current.Swap(e); old != nil {
		v.establishments.Add(-1)
		v.documentBytes.Add(-int64(old.documentBytes()))
		v.heldBytes.Add(-int64(old.size))
	}
	if e != nil {
		v.establishments.Add(1)
		v.documentBytes.Add(int64(e.documentBytes()))
		v.heldBytes.Add(int64(e.size))
	}
}

// MirrorStats describes what a mirror holds.
type MirrorStats struct {
	// Establishments counts the bundles held, initial values still loading included.
	Establishments int64 `json:"establishments"`
	// DocumentBytes is the size of every body and gzip coding the bundles held carry, each
	// counted whether or not it equals another.
	DocumentBytes int64 `json:"document_bytes"`
	// HeldBytes is the size of the arrays the bundles are held in: the documents, their
	// entity tags and header values, and their locations. Equal pieces of one bundle (a
	// document the same in two languages, equal header values) are held once, so it may be less
	// than DocumentBytes.
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

func (v *view) stats() MirrorStats {
	return MirrorStats{
		Establishments: v.establishments.Load(),
		DocumentBytes:  v.documentBytes.Load(),
		HeldBytes:      v.heldBytes.Load(),
		Bucket:         v.kv.Bucket(),
	}
}

// slot returns the slot of slug, or nil; for the watcher goroutine.
func (v *view) slot(slug string) *slot {
	if !v.caughtUp {
		return v.pending[slug]
	}
	return (*v.index[shardOf(slug)].Load())[slug]
}

// addSlot adds a slug: in place while the initial values load (nothing is published yet), by
// publishing a copy of its shard afterwards, so that a published map is never written.
func (v *view) addSlot(slug string, s *slot) {
	if !v.caughtUp {
		v.pending[slug] = s
		return
	}
	shard := &v.index[shardOf(slug)]
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
