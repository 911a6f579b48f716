package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// A rebuild renders the whole log into a new generation of the bucket of bundles while the
// current generation keeps being served and projected, then switches to it. Generation 1 is the
// bucket dockey.Bucket with the state bucket StateBucketName; generation n > 1 adds "_<n>" to
// both names.
//
// The revision rule holds across the switch because the new generation is built against the one
// it replaces (Config.Replaces): an establishment whose documents are the same keeps its revision,
// any other gets a higher one. While it is built, the current generation still changes; once its
// projector has stopped, Settle compares again every establishment with a record since the build
// began, and raises in the new generation whatever would go back. After the switch,
// AnnounceSwitch announces every establishment whose documents the switch changed.

// GenerationBuckets returns the names of the bucket of bundles and of the state bucket of
// generation n (at least 1).
func GenerationBuckets(n int) (docs, state string) {
	if n <= 1 {
		return dockey.Bucket, StateBucketName
	}
	suffix := "_" + strconv.Itoa(n)
	return dockey.Bucket + suffix, StateBucketName + suffix
}

// OpenGeneration creates the buckets of generation n, or updates them to this configuration, as
// OpenBucket and OpenStateBucket do for generation 1.
func OpenGeneration(ctx context.Context, js jetstream.JetStream, n, replicas int) (docs *Bundles, state jetstream.KeyValue, err error) {
	docsName, stateName := GenerationBuckets(n)
	kv, err := openBucket(ctx, js, docsName, fmt.Sprintf("Rendered documents and access state, one bundle per establishment (generation %d).", n), replicas)
	if err != nil {
		return nil, nil, err
	}
	docs = NewBundles(js, kv)
	if state, err = openBucket(ctx, js, stateName, fmt.Sprintf("The projector's checkpoint and the state of establishments it does not hold in memory (generation %d).", n), replicas); err != nil {
		return nil, nil, err
	}
	return docs, state, nil
}

// Checkpoint is what a projector's checkpoint says to a rebuild.
type Checkpoint struct {
	// Position: every record up to it is projected.
	Position uint64
	// FilesURL is the base URL of uploaded files the projector renders under: what a rebuild must
	// render under for its bundles to compare with the current ones.
	FilesURL string
	// Replayed is when the projector last finished a replay of the whole log, which may change
	// any bundle, not only those of the records after a position.
	Replayed time.Time
}

// ReadCheckpoint returns the checkpoint of the projector whose state bucket is kv; ok is false
// when there is none of this code's format.
func ReadCheckpoint(ctx context.Context, kv StateStore) (Checkpoint, bool, error) {
	cp, ok, err := readCheckpoint(ctx, kv)
	return Checkpoint{Position: cp.Position, FilesURL: cp.Files, Replayed: cp.Replayed}, ok, err
}

// replace stores, for an establishment of the replay that the bucket holds nothing of, the
// bundle that follows the one Config.Replaces held for it when the replay began, whose summary's
// fingerprint is floor (0: none, unknownPrint: one to read): the replayed bundle itself when the
// two are the same or there was none. Nothing is announced: the bucket is not served yet. What the
// replaced bucket stored since is Settle's.
func (p *Projector) replace(ctx context.Context, t *tracked, floor uint64) (bool, error) {
	replayed := t.stored
	c := t.render(p.cfg.FilesURL, nil)
	u := projections.Update{Bundle: c.Bundle(replayed.Revision())}
	if floor != 0 && floor != replayed.Fingerprint() {
		prev, err := p.summaryIn(ctx, p.cfg.Replaces, string(t.agg.Slug))
		if err != nil {
			return false, err
		}
		if prev != nil && !prev.Same(replayed) {
			if u, err = p.nextBeside(ctx, p.cfg.Replaces, string(t.agg.Slug), prev, c, replayed.Revision()); err != nil {
				return false, err
			}
		}
	}
	u.Bundle.Sequence = replayed.Sequence()
	u.Resources = nil
	ok, err := p.store(ctx, u)
	if ok {
		t.stored = projections.Summarize(&u.Bundle)
	}
	return ok, err
}

// Settle makes the bucket of bundles safe to serve in place of Config.Replaces, once nothing
// writes to that one any more and Run has returned: for every establishment with a record from
// sequence from through to, it compares the two bundles again and, where the switch would send
// the revision back or keep it over different documents, stores in the bucket the same documents
// at the revision that follows the replaced bundle's. So too where the replaced bundle's day
// ahead, which readers may have been served from its midnight, holds the bucket's revision with
// other documents, or a later one (servedBelow). It returns how many it stored.
//
// Records up to from-1 must have been projected into Config.Replaces before the replay of the
// whole log read its bundles; records up to to must all have been projected into the bucket.
func (p *Projector) Settle(ctx context.Context, from, to uint64) (int, error) {
	if p.cfg.Replaces == nil {
		return 0, errors.New("projections: settle: the projector replaces no bucket")
	}
	if p.log == "" {
		return 0, errors.New("projections: settle: the projector has not run")
	}
	slugs, err := touched(ctx, p.cfg.Store, from, to)
	if err != nil {
		return 0, fmt.Errorf("projections: settle: %w", err)
	}
	var raised atomic.Int64
	_, err = fanOut(ctx, p.newLanes(), func(s string) string { return s }, func(ctx context.Context, l *lane, slug string) error {
		ok, err := p.settleOne(ctx, l, slug)
		if ok {
			raised.Add(1)
		}
		return err
	}, func(ctx context.Context, dispatch func(string) error) (uint64, error) {
		for _, slug := range slugs {
			if err := dispatch(slug); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		return int(raised.Load()), fmt.Errorf("projections: settle: %w", err)
	}
	return int(raised.Load()), nil
}

// touched returns, sorted, the establishments with a record of log from sequence from through to.
func touched(ctx context.Context, log Replayer, from, to uint64) ([]string, error) {
	if from > to {
		return nil, nil
	}
	seen := map[string]struct{}{}
	var slugs []string
	err := log.ReplayPart(ctx, from, to, func(string) bool { return true }, func(rec events.Record) error {
		if _, ok := seen[rec.Establishment]; !ok {
			seen[rec.Establishment] = struct{}{}
			slugs = append(slugs, rec.Establishment)
		}
		return nil
	}, nil, func(uint64, error) {})
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	slices.Sort(slugs)
	return slugs, nil
}

func (p *Projector) settleOne(ctx context.Context, l *lane, slug string) (bool, error) {
	parsed, err := domain.ParseSlug(slug)
	if err != nil {
		return false, nil // its records were skipped
	}
	prev, err := p.summaryIn(ctx, p.cfg.Replaces, slug)
	if err != nil || prev == nil {
		return false, err
	}
	cur, err := p.summaryIn(ctx, p.cfg.KV, slug)
	if err != nil {
		return false, err
	}
	// The replaced bundle's day ahead may have been served from its midnight: the switch must not
	// go below it either.
	prevAhead, _, err := p.summaryAt(ctx, p.cfg.Replaces, dockey.AheadKey(slug))
	if err != nil {
		return false, err
	}
	switch {
	case cur == nil:
		p.logger.Warn("the replaced bucket holds an establishment the new one does not", "slug", slug)
		return false, nil
	case cur.Same(prev), cur.Revision() > prev.Revision() && !servedBelow(cur, prevAhead):
		return false, nil
	}
	// The establishment as the bucket's bundles show it, at the revision that follows the
	// replaced one: its saved state, and its records up to the one that stored the bundle, or
	// that of its day ahead when later and rendered beside it (the records between changed no
	// current document).
	upTo := cur.Sequence()
	ahead, _, err := p.summaryAt(ctx, p.cfg.KV, dockey.AheadKey(slug))
	if err != nil {
		return false, err
	}
	if ahead != nil && ahead.Base() == cur.Revision() {
		upTo = max(upTo, ahead.Sequence())
	}
	t, err := l.savedState(ctx, parsed)
	if err != nil {
		return false, err
	}
	if t == nil || t.seq > upTo {
		t = &tracked{agg: domain.New(parsed)}
	}
	if t.seq < upTo {
		var recs []events.Record
		if err := p.retry(ctx, "read records of "+slug, func() error {
			// Those before the last one, an unreadable message passed over as the projector
			// passed over it, then that one, which it read.
			before, err := p.cfg.Store.Before(ctx, slug, t.seq+1, upTo, func(uint64, error) {})
			if err != nil {
				return err
			}
			last, err := p.cfg.Store.Range(ctx, slug, upTo, upTo)
			recs = append(before, last...)
			return err
		}); err != nil {
			return false, err
		}
		for _, rec := range recs {
			t.apply(p.logger, rec)
		}
	}
	c := t.render(p.cfg.FilesURL, nil)
	u := nextAbove(prev, prevAhead, c, cur.Revision())
	if u.Bundle.Revision <= cur.Revision() && servedBelow(cur, prevAhead) {
		// The replaced documents, but the day ahead beside them may have been served: above it.
		u = projections.Update{Bundle: c.Bundle(prevAhead.Revision() + 1), Write: true}
	}
	if u.Bundle.Revision <= cur.Revision() {
		return false, nil
	}
	u.Bundle.Sequence = cur.Sequence()
	u.Resources = nil
	p.logger.Info("raised the revision of a bundle of the new generation above the replaced one", "slug", slug,
		"revision", u.Bundle.Revision, "was", cur.Revision(), "replaced", prev.Revision())
	ok, err := p.store(ctx, u)
	if !ok || err != nil {
		return ok, err
	}
	// The day ahead stored beside the bundle replaced is served beside no other: it follows it,
	// above the one stored (what a saved state says of it may be older).
	t.stored, t.ahead = projections.Summarize(&u.Bundle), nil
	return true, p.settleAhead(ctx, t)
}

// SwitchBuckets is what AnnounceSwitch reads of a bucket of bundles; jetstream.KeyValue
// satisfies it.
type SwitchBuckets interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
}

// slugsIn lists, sorted, the establishments kv holds a bundle of, from the keys alone. A listing
// that ends before the last key is an error, not a shorter list.
func slugsIn(ctx context.Context, kv SwitchBuckets) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(ctx, dockey.Watch, jetstream.MetaOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list bundles: %w", err)
	}
	defer func() {
		_ = w.Stop()
		go func() { // a delivery blocked on a full channel ends, and the channel closes
			for range w.Updates() {
			}
		}()
	}()
	var slugs []string
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return nil, errors.New("list bundles: the listing ended before the last key")
			case e == nil:
				slices.Sort(slugs)
				return slugs, nil
			}
			if slug, ok := dockey.SlugOf(e.Key()); ok {
				slugs = append(slugs, slug)
			}
		}
	}
}

// AnnounceConfig is what AnnounceSwitch needs.
type AnnounceConfig struct {
	// Old is the generation served before the switch, New the one served after.
	Old, New SwitchBuckets
	// Notifier is told of each change.
	Notifier AnnouncedNotifier
	// Since is the replaced generation's position when the build began (or its last settled
	// position): a bundle of either generation stored by a later record is announced unless its
	// revision in New was, whatever Old holds, since the old generation's projector may have
	// stored it without announcing it when it stopped.
	Since uint64
	// Workers bounds the establishments compared at once; 0 is DefaultVerifyWorkers.
	Workers int
	// Progress, optional, is called after each establishment with the number compared so far and
	// their total, from several goroutines at once.
	Progress func(done, total int)
	// Logger receives bundles that cannot be read; nil discards them.
	Logger *slog.Logger
}

// AnnounceSwitch tells cfg.Notifier of every establishment whose documents the switch from Old to
// New changed: one public in New at a revision above Old's, or absent from Old, and not yet
// announced at that revision, with every resource it has (each document's bytes changed, its
// revision among them); and of every one stored in New by a record after cfg.Since whose
// revision, or whether it is served, was not announced (a transition, as a start of the projector
// announces one that was lost). Its changes carry no Stored: a sequence of New's stream means
// nothing to whoever read Old. It can be run again after an interruption: what was announced is
// not announced again. It returns how many it announced.
func AnnounceSwitch(ctx context.Context, cfg AnnounceConfig) (int, error) {
	if cfg.Old == nil || cfg.New == nil || cfg.Notifier == nil {
		return 0, errors.New("projections: announce: old and new buckets and a notifier are required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = DefaultVerifyWorkers
	}
	slugs, err := slugsIn(ctx, cfg.New)
	if err != nil {
		return 0, fmt.Errorf("projections: announce: %w", err)
	}
	var announced atomic.Int64
	err = eachSlug(ctx, slugs, workers, cfg.Progress, func(ctx context.Context, slug string) error {
		cur, err := readSummary(ctx, cfg.New, slug, logger)
		if err != nil || cur == nil {
			return err
		}
		prev, err := readSummary(ctx, cfg.Old, slug, logger)
		if err != nil {
			return err
		}
		if prev != nil && cur.Revision() <= prev.Revision() && cur.Sequence() <= cfg.Since && prev.Sequence() <= cfg.Since {
			return nil // the same documents, announced by the old generation's projector
		}
		last, err := cfg.Notifier.Announced(ctx, slug)
		if err != nil && !errors.Is(err, events.ErrInvalidSignal) {
			return err
		}
		c, ok := lost(slug, cur, last)
		if !ok {
			return nil
		}
		if err := cfg.Notifier.Changed(ctx, c); err != nil {
			return err
		}
		announced.Add(1)
		return nil
	})
	if err != nil {
		return int(announced.Load()), fmt.Errorf("projections: announce%w", err)
	}
	return int(announced.Load()), nil
}
