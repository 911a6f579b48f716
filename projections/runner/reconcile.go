package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// reconciled counts what a replay's reconciliation did, over all its passes.
type reconciled struct {
	mu       sync.Mutex
	total    int // establishments of the log
	done     int // establishments reconciled
	written  int
	absent   int
	examples []string // the first absentExamples absent ones by slug
}

func (r *reconciled) noteAbsent(slug string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.absent++
	i, _ := slices.BinarySearch(r.examples, slug)
	if r.examples = slices.Insert(r.examples, i, slug); len(r.examples) > absentExamples {
		r.examples = r.examples[:absentExamples]
	}
}

// addAbsent adds to r the establishments absent from the log o noted.
func (r *reconciled) addAbsent(o *reconciled) {
	for _, slug := range o.examples {
		r.noteAbsent(slug)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.absent += o.absent - len(o.examples)
}

// reconcile stores, for every establishment of slugs, replayed by lanes, the bundle that follows
// the one found in the bucket, each worker its share of the establishments. Content equal to the
// stored content keeps the stored revision; different content gets max(replayed revision, stored
// revision + 1), above the revision of a day ahead stored beside it too (nextBeside).
func (p *Projector) reconcile(ctx context.Context, lanes []*lane, share []storedPrint, tally *reconciled) error {
	_, err := fanOut(ctx, lanes, func(s storedPrint) string { return s.slug }, func(ctx context.Context, l *lane, s storedPrint) error {
		written, err := p.reconcileOne(ctx, l, s)
		if errors.Is(err, errAbsentFromLog) {
			tally.noteAbsent(s.slug)
			err = nil
		}
		tally.mu.Lock()
		if written {
			tally.written++
		}
		tally.done++
		done := tally.done
		tally.mu.Unlock()
		if err == nil && p.cfg.Progress != nil {
			p.cfg.Progress(done, tally.total)
		}
		return err
	}, func(ctx context.Context, dispatch func(storedPrint) error) (uint64, error) {
		for _, s := range share {
			if err := dispatch(s); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	return err
}

// storedPrint is an establishment of the log and the fingerprint of the summary of its stored
// bundle, 0 when none was stored, unknownPrint when its summary has none; floor is that of its
// bundle in Config.Replaces; seq is the sequence of its stored bundle's write in the bucket's
// stream, 0 when not known.
type storedPrint struct {
	slug              string
	print, floor, seq uint64
	// announced is the last announcement of the establishment when the replay began, when
	// knownAnnounced says the notifier told it; else the notifier is asked.
	announced      Announcement
	knownAnnounced bool
}

// storedPrints returns the fingerprint of the summary of every bundle of kv at the index of its
// establishment in slugs (sorted): 0 where none is stored, unknownPrint where its summary has no
// fingerprint; and at the same index the sequence of the bundle's write in the bucket's stream,
// which an announcement made again carries. It counts in tally, unless nil, the bundles of establishments absent from slugs.
// It reads the fingerprints from the bundles' headers (headerPrints), or, where a bundle has
// none, every bundle once, in the bucket's order. One read of the bucket in its order costs far
// less than a read per establishment, each of which loads a block of the store's files: the
// reconciliation of an establishment whose stored bundle is the replayed one reads nothing more.
func storedPrints(ctx context.Context, kv *Bundles, slugs []string, tally *reconciled) (prints, seqs []uint64, err error) {
	var absent reconciled
	prints, seqs, err = headerPrints(ctx, kv, slugs, &absent)
	if !errors.Is(err, errNoPrints) {
		if err == nil && tally != nil {
			tally.addAbsent(&absent)
		}
		return prints, seqs, err
	}
	// Bundles stored without their fingerprint, by an earlier version, or a bucket whose headers
	// cannot be read: the bundles are read.
	return bundlePrints(ctx, kv, slugs, tally)
}

// bundlePrints returns what storedPrints does from the bundles themselves, read once each in the
// bucket's order.
func bundlePrints(ctx context.Context, kv *Bundles, slugs []string, tally *reconciled) (prints, seqs []uint64, err error) {
	w, err := kv.Watch(ctx, dockey.Watch, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, nil, fmt.Errorf("read stored bundles: %w", err)
	}
	defer func() {
		_ = w.Stop()
		// A delivery blocked on a full channel when the read stopped early ends, and the
		// channel closes.
		go func() {
			for range w.Updates() {
			}
		}()
	}()
	prints, seqs = make([]uint64, len(slugs)), make([]uint64, len(slugs))
	for {
		var (
			e  jetstream.KeyValueEntry
			ok bool
		)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case e, ok = <-w.Updates():
		}
		switch {
		case !ok:
			return nil, nil, errors.New("read stored bundles: the watch ended before the last one")
		case e == nil:
			return prints, seqs, nil // every bundle stored when the watch started
		}
		slug, valid := dockey.SlugOf(e.Key())
		if !valid {
			continue
		}
		i, found := slices.BinarySearch(slugs, slug)
		if !found {
			if tally != nil {
				tally.noteAbsent(slug)
			}
			continue
		}
		prints[i], seqs[i] = unknownPrint, e.Revision()
		if s, err := projections.SummarizeStored(e.Value()); err == nil && s.Fingerprint() != 0 {
			prints[i] = s.Fingerprint()
		}
	}
}

// headerPrints returns what storedPrints does from the fingerprints in the bundles' headers, or
// errNoPrints at the first bundle of an establishment of slugs stored without one. It notes in
// absent the bundles of establishments absent from slugs.
func headerPrints(ctx context.Context, kv *Bundles, slugs []string, absent *reconciled) (prints, seqs []uint64, err error) {
	prints, seqs = make([]uint64, len(slugs)), make([]uint64, len(slugs))
	err = kv.prints(ctx, func(key string, print, seq uint64, known bool) error {
		slug, valid := dockey.SlugOf(key)
		if !valid {
			return nil
		}
		i, found := slices.BinarySearch(slugs, slug)
		switch {
		case !found:
			if print != 0 || !known { // stored, not deleted
				absent.noteAbsent(slug)
			}
		case !known:
			return errNoPrints
		default:
			prints[i], seqs[i] = print, seq // 0 once deleted
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return prints, seqs, nil
}

// unknownPrint stands for the fingerprint of a stored bundle whose summary has none, or that cannot
// be read: one to read again.
const unknownPrint = math.MaxUint64

// lastAnnounced returns the last announcement of s's establishment when known,
// unknownAnnouncement for the notifier to be asked.
func (s storedPrint) lastAnnounced() Announcement {
	if !s.knownAnnounced {
		return unknownAnnouncement
	}
	return s.announced
}

// errAbsentFromLog marks a bundle stored for an establishment the log never created.
var errAbsentFromLog = errors.New("stored bundle of an establishment absent from the log")

// absentExamples is how many slugs the warning about bundles absent from the log names.
const absentExamples = 5

// reconcileOne reconciles one establishment of the replay with its stored bundle, whose summary's
// fingerprint is s.print, then its day ahead with the stored one, and reports whether it stored a
// current bundle.
func (p *Projector) reconcileOne(ctx context.Context, l *lane, s storedPrint) (bool, error) {
	written, t, err := p.reconcileCurrent(ctx, l, s)
	if err != nil || t == nil {
		return written, err
	}
	return written, p.settleAhead(ctx, t)
}

// reconcileCurrent reconciles one establishment of the replay with its stored bundle, whose
// summary's fingerprint is s.print, and reports whether it stored a bundle; t is the establishment
// when it is one of the log.
func (p *Projector) reconcileCurrent(ctx context.Context, l *lane, s storedPrint) (written bool, t *tracked, err error) {
	slug, print := s.slug, s.print
	t, ok := l.cache.Peek(slug)
	if !ok {
		parsed, err := domain.ParseSlug(slug)
		if err != nil {
			return false, nil, nil // its records were skipped
		}
		if t, err = l.savedState(ctx, parsed); err != nil {
			return false, nil, err
		}
	}
	switch {
	case (t == nil || t.stored == nil) && print == 0:
		return false, t, nil // nothing was stored, nothing is to be
	case t != nil && t.stored != nil && t.stored.Fingerprint() == print:
		// What the replay would have stored was stored when the bucket was read: nothing to
		// render, nor to read again.
		return false, t, p.reannounce(ctx, t, s.lastAnnounced(), s.seq)
	}
	var stored *projections.BundleSummary // none when the bucket held none: only this projector writes to it
	var value []byte
	if print != 0 {
		if stored, value, err = p.summaryAt(ctx, p.cfg.KV, dockey.Key(slug)); err != nil {
			return false, nil, err
		}
	}
	if stored == nil && p.cfg.Replaces != nil && t != nil && t.stored != nil {
		written, err = p.replace(ctx, t, s.floor)
		return written, t, err
	}
	if t == nil || t.stored == nil {
		// The log holds no creation for this slug, or its replayed state cannot be read back.
		if stored != nil {
			return false, nil, errAbsentFromLog
		}
		return false, nil, nil
	}
	replayed := t.stored
	t.stored = stored
	if stored.Same(replayed) {
		// What the replay would have stored is stored: nothing to render.
		return false, t, p.reannounce(ctx, t, s.lastAnnounced(), 0)
	}
	u, err := p.nextBeside(ctx, p.cfg.KV, slug, stored, t.render(p.cfg.FilesURL, nil), replayed.Revision())
	if err != nil {
		return false, nil, err
	}
	u.Bundle.Sequence = replayed.Sequence() // the record a projection one at a time last stored
	if !u.Write {
		return false, t, p.reannounce(ctx, t, s.lastAnnounced(), 0)
	}
	codingsFrom(&u.Bundle, value)
	ok, err = p.store(ctx, u)
	if ok {
		t.stored = projections.Summarize(&u.Bundle)
	}
	return ok, t, err
}
