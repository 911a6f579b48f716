package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
)

// ErrStopped is returned by WaitFor when Run has returned before the awaited sequence was
// projected.
var ErrStopped = errors.New("projections: projector stopped")

// Log is the event log the projector reads; *events.Store satisfies it.
type Log interface {
	// Replay calls fn for every stored record from sequence from, and returns the sequence of the
	// last one.
	Replay(ctx context.Context, from uint64, fn func(events.Record) error) (last uint64, err error)
	// Follow calls fn for every record from sequence from, stored or to come, until ctx is done.
	Follow(ctx context.Context, from uint64, fn func(events.Record) error) error
}

// Notifier is told about every rise of an establishment's content_revision, after the bundle
// is stored. A failed Changed is retried until it succeeds or the projector stops, so Changed
// must tolerate being called again with the same change.
type Notifier interface {
	Changed(ctx context.Context, c Change) error
}

// AnnouncedNotifier is a Notifier that can tell the last revision it announced for an
// establishment (0 for none it still knows of). With it, the projector announces at start a
// stored revision whose announcement was lost, in a crash between storing its bundle and
// telling the notifier: the receivers of changes never miss the latest revision.
type AnnouncedNotifier interface {
	Notifier
	Announced(ctx context.Context, slug string) (int64, error)
}

// ReannounceWithin bounds how old a change may be for the projector to check at start that it
// was announced: a notifier forgets older announcements (the change signals stream keeps them
// for events.SignalMaxAge), and an establishment unchanged for that long must not be announced
// again at every start.
const ReannounceWithin = events.SignalMaxAge - 24*time.Hour

// Change is a rise of one establishment's content_revision.
type Change struct {
	Slug     string
	Revision int64
	// Resources lists the resources whose bytes changed: "establishment", "hours", "menus", then
	// "menus/<menu_type_slug>" by slug for each menu detail that changed, appeared or disappeared.
	Resources []string
}

// Config is what a Projector needs.
type Config struct {
	// Store is the event log, normally an *events.Store.
	Store Log
	// KV is the bucket of bundles, normally the jetstream.KeyValue returned by OpenBucket.
	KV Bucket
	// Logger receives skipped events and retried writes; nil discards them.
	Logger *slog.Logger
	// Notifier, optional, is called after each stored rise of a revision, by several workers
	// at once: it must be safe for concurrent use, as KV must.
	Notifier Notifier
	// MaxValueSize is the largest encoded bundle stored, in bytes; zero means MaxBundleSize. Set
	// it to the connection's maximum payload when that is lower, so that an oversized bundle is
	// refused at once instead of retried.
	MaxValueSize int
	// Workers is how many establishments are projected at once, rendered, compressed and stored
	// in parallel; zero means GOMAXPROCS. The records of one establishment are always projected
	// by the same worker, in the order of the log, so the bundles and revisions stored are those
	// of a projection one record at a time.
	Workers int
}

// Validate reports a missing dependency.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("projections: config: store is required"))
	}
	if c.KV == nil {
		errs = append(errs, errors.New("projections: config: kv bucket is required"))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("projections: config: workers %d is negative", c.Workers))
	}
	if c.MaxValueSize < 0 || c.MaxValueSize > MaxBundleSize {
		errs = append(errs, fmt.Errorf("projections: config: max value size %d is outside 0 to %d", c.MaxValueSize, MaxBundleSize))
	}
	return errors.Join(errs...)
}

// Retry delays of a bundle write that failed, for instance while NATS is unreachable.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 5 * time.Second
)

// Projector keeps the bucket of bundles equal to the rendering of the event log. Run does the
// work; Position and WaitFor may be called from any goroutine.
type Projector struct {
	cfg    Config
	logger *slog.Logger

	started atomic.Bool
	stopped chan struct{} // closed when Run returns

	mu       sync.Mutex
	position uint64        // guarded by mu
	advanced chan struct{} // closed and replaced when position moves; guarded by mu
}

// New returns a projector for cfg. It does nothing until Run is called.
func New(cfg Config) (*Projector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = MaxBundleSize
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	return &Projector{
		cfg:      cfg,
		logger:   logger,
		stopped:  make(chan struct{}),
		advanced: make(chan struct{}),
	}, nil
}

// Position returns the sequence of the last record of the log whose effect is stored.
func (p *Projector) Position() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.position
}

// WaitFor returns once the record with sequence seq, and every one before it, is projected and
// stored. It returns ctx's error when ctx ends first, and ErrStopped when Run has returned.
func (p *Projector) WaitFor(ctx context.Context, seq uint64) error {
	for {
		p.mu.Lock()
		pos, advanced := p.position, p.advanced
		p.mu.Unlock()
		if pos >= seq {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return fmt.Errorf("wait for sequence %d (projected %d): %w", seq, pos, ctx.Err())
		case <-p.stopped:
			if p.Position() >= seq {
				return nil
			}
			return fmt.Errorf("wait for sequence %d: %w", seq, ErrStopped)
		}
	}
}

func (p *Projector) advance(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq <= p.position {
		return
	}
	p.position = seq
	close(p.advanced)
	p.advanced = make(chan struct{})
}

// Run projects the log until ctx is done or the log cannot be read; a projector runs once.
//
// It reads the bundles already stored, replays the whole log in memory, stores a bundle only
// where the replayed one differs from the stored one, and then follows new records as they
// arrive, storing each change. Revisions follow the rule of next: a stored revision never goes
// back, whatever the bucket held before.
func (p *Projector) Run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("projections: run: projector already started")
	}
	defer close(p.stopped)

	stored, err := loadSummaries(ctx, p.cfg.KV, p.logger)
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	// The model is shared out among the workers by establishment: each works on its own share.
	models := make([]*model, p.cfg.Workers)
	for i := range models {
		models[i] = newModel(p.logger)
	}
	start := time.Now()
	last, err := fanOut(ctx, models, replayRecord, func(ctx context.Context, dispatch func(events.Record) error) (uint64, error) {
		return p.read(ctx, 1, nil, dispatch)
	})
	if err != nil {
		return fmt.Errorf("projections: replay: %w", err)
	}
	written, err := p.reconcile(ctx, models, stored)
	if err != nil {
		return fmt.Errorf("projections: reconcile: %w", err)
	}
	p.advance(last)
	established := 0
	for _, m := range models {
		established += len(m.byslug)
	}
	p.logger.Info("projections caught up", "position", last, "establishments", established,
		"stored", len(stored), "written", written, "took", time.Since(start).Round(time.Millisecond))

	// Records finish out of order across workers; the position moves past a record only once
	// every record before it is stored.
	reached := newWatermark()
	dispatched := last
	_, err = fanOut(ctx, models, func(ctx context.Context, m *model, rec events.Record) error {
		if err := p.handle(ctx, m, rec); err != nil {
			return err
		}
		if seq, ok := reached.finish(rec.Sequence); ok {
			p.advance(seq)
		}
		return nil
	}, func(ctx context.Context, dispatch func(events.Record) error) (uint64, error) {
		skipped := func(seq uint64) {
			dispatched = max(dispatched, seq)
			reached.add(seq)
			if seq, ok := reached.finish(seq); ok {
				p.advance(seq)
			}
		}
		return p.read(ctx, last+1, skipped, func(rec events.Record) error {
			if rec.Sequence <= dispatched {
				return nil // delivered again: already projected or on its way
			}
			dispatched = rec.Sequence
			reached.add(rec.Sequence)
			return dispatch(rec)
		})
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		return errors.New("projections: follow: the event log stopped delivering records")
	}
	return fmt.Errorf("projections: follow: %w", err)
}

// replayRecord applies rec to the model and keeps the summary of the bundle a projection one
// record at a time would have stored, without storing it.
func replayRecord(_ context.Context, m *model, rec events.Record) error {
	t := m.apply(rec)
	if t == nil {
		return nil
	}
	if u, ok := t.project(rec.Sequence); ok && u.write {
		t.stored = summarize(&u.bundle)
		if len(rec.Events) > 0 {
			t.changed = rec.Events[0].Time
		}
	}
	return nil
}

// read passes the records of the log from sequence from to fn: those stored now, or, when
// skipped is not nil, also those to come until ctx ends. A stored message that is not a readable
// record (events.ErrInvalidRecord) is logged and passed over, so that one bad message never stops
// the projection; while following, skipped is told the sequence passed over. It returns the
// sequence up to which the log has been read.
func (p *Projector) read(ctx context.Context, from uint64, skipped func(seq uint64), fn func(events.Record) error) (uint64, error) {
	follow := skipped != nil
	seen := from - 1 // last sequence passed to fn
	var skip uint64  // messages passed over after seen
	accept := func(rec events.Record) error {
		if err := fn(rec); err != nil {
			return err
		}
		seen, skip = rec.Sequence, 0
		return nil
	}
	for {
		start := seen + 1 + skip
		var err error
		if follow {
			err = p.cfg.Store.Follow(ctx, start, accept)
		} else {
			_, err = p.cfg.Store.Replay(ctx, start, accept)
		}
		if err == nil {
			// Every message before start that was not passed to fn is unreadable or absent.
			return max(seen, start-1), nil
		}
		if ctx.Err() != nil || !errors.Is(err, events.ErrInvalidRecord) {
			return seen, err
		}
		// The first message from start on is unreadable, and nothing readable lies between seen
		// and it, or the consumer would have delivered it first: every sequence up to start is
		// absent or unreadable. Resume one message further.
		skip++
		p.logger.Error("skip unreadable message of the event log", "after_seq", seen, "skipped", skip, "err", err)
		if follow {
			skipped(seen + skip)
		}
	}
}

// reconcile stores, for every establishment of the replayed log, the bundle that follows the one
// found in the bucket, each worker its share of the establishments, and returns how many it
// wrote. Content equal to the stored content keeps the stored revision; different content gets
// max(replayed revision, stored revision + 1).
func (p *Projector) reconcile(ctx context.Context, models []*model, stored map[string]*summary) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		written  int
		failures []error
	)
	for _, m := range models {
		wg.Go(func() {
			n, err := p.reconcileModel(ctx, m, stored)
			mu.Lock()
			defer mu.Unlock()
			written += n
			if err != nil {
				failures = append(failures, err)
				cancel()
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		return written, failures[0]
	}
	var absent []string
	for slug := range stored {
		if t := models[laneOf(slug, len(models))].byslug[slug]; t == nil || !t.agg.Created {
			absent = append(absent, slug)
		}
	}
	if len(absent) > 0 {
		// One line, whatever their number: a count and the first few by slug.
		slices.Sort(absent)
		p.logger.Warn("stored bundles of establishments absent from the log are left as they are",
			"count", len(absent), "examples", absent[:min(len(absent), absentExamples)])
	}
	return written, nil
}

// absentExamples is how many slugs the warning about bundles absent from the log names.
const absentExamples = 5

// reconcileModel reconciles the establishments of one worker's share of the model, in the order
// of their slugs.
func (p *Projector) reconcileModel(ctx context.Context, m *model, stored map[string]*summary) (int, error) {
	written := 0
	for _, slug := range slices.Sorted(maps.Keys(m.byslug)) {
		t := m.byslug[slug]
		replayed := t.stored
		if replayed == nil {
			continue // the log holds no creation for this slug
		}
		var u update
		if s, ok := stored[slug]; ok {
			t.stored = s
			u = next(s, render(t.agg), replayed.revision)
		} else {
			// Nothing stored: the replayed bundle, rendered again from the final state.
			t.stored = nil
			u = next(nil, render(t.agg), replayed.revision)
		}
		if !u.write {
			if err := p.reannounce(ctx, t); err != nil {
				return written, err
			}
			continue
		}
		ok, err := p.store(ctx, u)
		if err != nil {
			return written, err
		}
		if ok {
			t.stored = summarize(&u.bundle)
			written++
		}
	}
	return written, nil
}

// handle projects one live record on the share of the model of its establishment.
func (p *Projector) handle(ctx context.Context, m *model, rec events.Record) error {
	if t := m.apply(rec); t != nil {
		if u, ok := t.project(rec.Sequence); ok && u.write {
			stored, err := p.store(ctx, u)
			if err != nil {
				return err
			}
			if stored {
				t.stored = summarize(&u.bundle)
			}
		}
	}
	return nil
}

// store writes the bundle of u, retrying until it is stored or ctx ends, then tells the
// notifier when the revision rose. It reports false, without error, for a bundle larger than
// Config.MaxValueSize: the establishment keeps its previous bundle until a later change fits.
func (p *Projector) store(ctx context.Context, u update) (bool, error) {
	b := &u.bundle
	compress(b)
	value, err := EncodeBundle(b)
	if err != nil {
		return false, err
	}
	if len(value) > p.cfg.MaxValueSize {
		p.logger.Error("bundle too large, previous bundle kept", "slug", b.Slug,
			"revision", b.Revision, "bytes", len(value), "max_bytes", p.cfg.MaxValueSize)
		return false, nil
	}
	key := dockey.Key(b.Slug)
	for wait := retryFirstWait; ; wait = min(2*wait, retryMaxWait) {
		_, err := p.cfg.KV.Put(ctx, key, value)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		p.logger.Warn("store bundle failed, retrying", "key", key, "revision", b.Revision, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
	if len(u.resources) > 0 {
		if err := p.notify(ctx, Change{Slug: b.Slug, Revision: b.Revision, Resources: u.resources}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// notify tells the notifier about c, retrying until it succeeds or ctx ends: a revision stored
// but never announced would leave receivers on an older one.
func (p *Projector) notify(ctx context.Context, c Change) error {
	if p.cfg.Notifier == nil {
		return nil
	}
	for wait := retryFirstWait; ; wait = min(2*wait, retryMaxWait) {
		err := p.cfg.Notifier.Changed(ctx, c)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.logger.Warn("notify change failed, retrying", "slug", c.Slug, "revision", c.Revision, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// reannounce announces the stored bundle of t again, with every resource, when it changed
// within ReannounceWithin and the notifier's last announcement for it is older.
func (p *Projector) reannounce(ctx context.Context, t *tracked) error {
	n, ok := p.cfg.Notifier.(AnnouncedNotifier)
	if !ok || t.stored == nil || time.Since(t.changed) > ReannounceWithin {
		return nil
	}
	s := t.stored
	slug := string(t.agg.Slug)
	last, err := n.Announced(ctx, slug)
	if err != nil {
		return fmt.Errorf("last announcement of %s: %w", slug, err)
	}
	if last >= s.revision {
		return nil
	}
	p.logger.Info("announcing a stored revision whose announcement was lost", "slug", slug, "revision", s.revision, "announced", last)
	return p.notify(ctx, Change{Slug: slug, Revision: s.revision, Resources: s.resources()})
}
