package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// Difference is one establishment whose stored bundle is not what the log renders.
type Difference struct {
	Slug   string `json:"slug"`
	Reason string `json:"reason"`
}

// Report is the outcome of Verify.
type Report struct {
	Position uint64 `json:"position"` // last sequence of the log when the check began
	// UpTo is VerifyConfig.UpTo: the position the bundles were compared up to, when not 0; a
	// projector stuck behind the log shows as an UpTo far below Position.
	UpTo      uint64 `json:"up_to,omitempty"`
	Checked   int    `json:"checked"`   // establishments compared
	Different int    `json:"different"` // establishments that differ; 0 when the bucket is exactly the log's rendering
	// Differences names the different establishments and why: the first
	// VerifyConfig.MaxDifferences of them by slug.
	Differences []Difference `json:"differences"`
}

// VerifyLog is what Verify reads of the event log; *events.Store satisfies it.
type VerifyLog interface {
	// Slugs lists the establishments with at least one record.
	Slugs(ctx context.Context) ([]string, error)
	// History returns one establishment's records, oldest first.
	History(ctx context.Context, slug string) ([]events.Record, error)
	// LastStreamSequence returns the sequence of the log's last record.
	LastStreamSequence(ctx context.Context) (uint64, error)
}

// VerifyBucket is what Verify reads of the bucket of bundles; jetstream.KeyValue satisfies it.
type VerifyBucket interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error)
}

// DefaultVerifyWorkers is how many establishments Verify checks at once unless told otherwise.
const DefaultVerifyWorkers = 8

// DefaultMaxDifferences is how many differences a Report lists unless told otherwise.
const DefaultMaxDifferences = 1000

// VerifyConfig is what Verify needs.
type VerifyConfig struct {
	Log VerifyLog
	KV  VerifyBucket
	// Workers bounds the establishments checked at once; 0 is DefaultVerifyWorkers.
	Workers int
	// MaxDifferences bounds the differences a Report lists, all of them counted; 0 is
	// DefaultMaxDifferences.
	MaxDifferences int
	// Progress, optional, is called after each establishment with the number checked so far and
	// their total, from several goroutines at once.
	Progress func(done, total int)
	// Logger receives skipped events; nil discards them.
	Logger *slog.Logger
	// FilesURL is the base URL the projector gives uploaded files under (Config.FilesURL).
	FilesURL string
	// Slugs, when not empty, are the only establishments checked.
	Slugs []string
	// UpTo, when not 0, is a position up to which the projector of KV has projected every
	// record (its checkpoint, say): records after it that a bundle does not reflect yet are no
	// difference, so that a live bucket is checked without races.
	UpTo uint64
}

// Verify rebuilds, for every establishment of the log and of the bucket, the bundle a replay of
// its records into an empty bucket would store, and compares it with the stored one: revision,
// access fields and every document body. So it does for the bundle of the day ahead stored beside
// it: the log's and the stored one, or the absence of either. It writes nothing, so it can run
// against a live bucket.
//
// It reads one establishment at a time per worker (its history by direct gets, its bundles by key
// gets), so its memory is bounded by the number of workers and it opens no consumer but the
// one that lists the bucket's keys. Without VerifyConfig.UpTo, records appended while it runs are
// not ignored: an establishment changed meanwhile can differ from a bundle not yet written, which
// is a race, not a fault; with it, there is no such race.
func Verify(ctx context.Context, cfg VerifyConfig) (Report, error) {
	if cfg.Log == nil || cfg.KV == nil {
		return Report{}, errors.New("projections: verify: log and bucket are required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = DefaultVerifyWorkers
	}
	maxDifferences := cfg.MaxDifferences
	if maxDifferences <= 0 {
		maxDifferences = DefaultMaxDifferences
	}
	position, err := cfg.Log.LastStreamSequence(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("projections: verify: %w", err)
	}
	slugs := cfg.Slugs
	if len(slugs) == 0 {
		if slugs, err = verifySlugs(ctx, cfg); err != nil {
			return Report{}, fmt.Errorf("projections: verify: %w", err)
		}
	}

	r := Report{Position: position, UpTo: cfg.UpTo, Differences: []Difference{}}
	var mu sync.Mutex
	err = eachSlug(ctx, slugs, workers, cfg.Progress, func(ctx context.Context, slug string) error {
		checked, diff, err := verifyOne(ctx, cfg, logger, slug)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if checked {
			r.Checked++
		}
		if diff != "" {
			r.Different++
			r.Differences = append(r.Differences, Difference{Slug: slug, Reason: diff})
			if len(r.Differences) >= 2*maxDifferences {
				r.Differences = firstDifferences(r.Differences, maxDifferences)
			}
		}
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("projections: verify%w", err)
	}
	r.Differences = firstDifferences(r.Differences, maxDifferences)
	return r, nil
}

// firstDifferences returns the first n of diffs by slug, sorted: the list a report keeps does not
// depend on the order in which the workers found them.
func firstDifferences(diffs []Difference, n int) []Difference {
	slices.SortFunc(diffs, func(a, b Difference) int { return strings.Compare(a.Slug, b.Slug) })
	return diffs[:min(n, len(diffs))]
}

// verifySlugs returns, sorted and once each, the establishments of the log and of the bucket.
func verifySlugs(ctx context.Context, cfg VerifyConfig) ([]string, error) {
	slugs, err := cfg.Log.Slugs(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := cfg.KV.ListKeysFiltered(ctx, dockey.Watch)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		keys = nil
	} else if err != nil {
		return nil, fmt.Errorf("list bundles: %w", err)
	}
	if keys != nil {
		defer func() { _ = keys.Stop() }()
		for key := range keys.Keys() {
			if slug, ok := dockey.SlugOf(key); ok {
				slugs = append(slugs, slug)
			}
		}
	}
	slices.Sort(slugs)
	return slices.Compact(slugs), nil
}

// verifyOne compares the stored bundle of slug with the one its history renders. checked is false
// when the log holds no creation of slug and no bundle is stored for it; diff is empty when the
// two agree.
func verifyOne(ctx context.Context, cfg VerifyConfig, logger *slog.Logger, slug string) (checked bool, diff string, err error) {
	// The bundles first: the history read after them holds every record they can reflect.
	got, gotAhead, diff, err := storedBundles(ctx, cfg.KV, slug)
	if err != nil || diff != "" {
		return diff != "", diff, err
	}
	recs, err := cfg.Log.History(ctx, slug)
	if err != nil {
		return false, "", err
	}
	// Without UpTo every record counts; with it, the bundle is the rendering of its records up to
	// UpTo, every one of them projected, or up to the one that stored it when that one is later.
	// Records after both are not its business yet. The projector stores a record's day ahead
	// before its current bundle: a later day ahead rendered beside the bundle read is of records
	// that wrote no current bundle, checked; one rendered beside another, or of a record that
	// writes the current bundle (an access change keeps the revision), is of a record whose
	// current bundle is on its way, not checked.
	limit, aheadLimit := uint64(math.MaxUint64), uint64(math.MaxUint64)
	if cfg.UpTo > 0 {
		limit = cfg.UpTo
		if got != nil {
			limit = max(limit, got.Sequence)
		}
		aheadLimit = limit
		if gotAhead != nil && gotAhead.Sequence > limit && got != nil && gotAhead.Base == got.Revision {
			aheadLimit = gotAhead.Sequence
		}
	}
	aheadOut := gotAhead != nil && gotAhead.Sequence > aheadLimit
	// The records are decided as a replay decides them, on summaries; the bundles they make are
	// rendered once, from the establishment as the last record leaves it, since a record that
	// wrote nothing changed nothing they hold: the current bundle as of limit, before a record
	// after it is applied.
	m := newModel(logger)
	var (
		t        *tracked
		c        projections.Rendering      // of the current bundle wanted, rendered once stored is
		stored   *projections.BundleSummary // its summary, nil for none
		rendered bool
		scratch  projections.Scratch
	)
	for _, rec := range recs {
		if rec.Sequence > aheadLimit {
			break
		}
		if t = m.track(rec); t == nil {
			continue
		}
		if rec.Sequence > limit && !rendered {
			c, stored = t.currentRendering(cfg.FilesURL)
			rendered = true
		}
		before := t.stored
		t.replay(logger, cfg.FilesURL, rec, &scratch)
		if rec.Sequence > limit && t.stored != before {
			aheadOut = true
			break
		}
	}
	if t != nil && !rendered {
		c, stored = t.currentRendering(cfg.FilesURL)
	}
	var (
		ca          projections.Rendering // of the day ahead wanted
		aheadStored *projections.BundleSummary
	)
	if t != nil && !aheadOut {
		ca, aheadStored = t.aheadRendering(cfg.FilesURL)
	}
	want, wantAhead := bundleOf(c, stored), bundleOf(ca, aheadStored)
	switch {
	case want == nil && got == nil:
		return false, "", nil
	case want == nil:
		return false, "stored bundle of an establishment absent from the log", nil
	case got == nil:
		return true, "no bundle stored", nil
	case got.Revision > want.Revision:
		// A projector that rendered the log again (another renderer, another base URL of the
		// files) raised the revision of what it stored anew: the same content at that revision
		// is the bucket the log makes.
		again := c.Bundle(got.Revision)
		again.Sequence = want.Sequence
		want = &again
	}
	if diff := bundleDifference(got, want); diff != "" || aheadOut {
		return true, diff, nil
	}
	if wantAhead != nil && gotAhead != nil && gotAhead.Revision > wantAhead.Revision {
		// So for a day ahead: stored above the log's revision (beside a bundle raised so, or
		// above another renderer's day ahead), the log's content at that revision is no
		// difference.
		again := ca.Bundle(gotAhead.Revision)
		again.Base, again.Starts, again.Sequence = got.Revision, wantAhead.Starts, wantAhead.Sequence
		wantAhead = &again
	}
	return true, aheadDifference(gotAhead, wantAhead, got), nil
}

// bundleReads bounds the reads of an establishment's two bundles that storedBundles makes while
// the projector writes them.
const bundleReads = 3

// storedBundles returns the current bundle of slug stored in kv and that of its day ahead, nil
// for one not stored, as they were at one instant: the current bundle, never removed while its
// establishment exists, is read before and after the day ahead, again while it changed between
// (at most bundleReads times, after which the last reads are taken, as a race). diff says why a
// stored value is not a bundle.
func storedBundles(ctx context.Context, kv VerifyBucket, slug string) (current, ahead *dockey.Bundle, diff string, err error) {
	current, before, diff, err := storedBundle(ctx, kv, dockey.Key(slug))
	for range bundleReads {
		if err != nil || diff != "" {
			return nil, nil, diff, err
		}
		if ahead, _, diff, err = storedBundle(ctx, kv, dockey.AheadKey(slug)); err != nil {
			return nil, nil, "", err
		} else if diff != "" {
			return nil, nil, "day ahead: " + diff, nil
		}
		var after uint64
		if current, after, diff, err = storedBundle(ctx, kv, dockey.Key(slug)); after == before {
			break
		}
		before = after
	}
	if err != nil || diff != "" {
		return nil, nil, diff, err
	}
	return current, ahead, "", nil
}

// storedBundle returns the bundle stored under key in kv and the revision of its entry, nil and 0
// when none is stored, with the body of each document absent from it nil; diff says why a stored
// value is not a bundle.
func storedBundle(ctx context.Context, kv VerifyBucket, key string) (b *dockey.Bundle, revision uint64, diff string, err error) {
	e, err := entryAt(ctx, kv, key)
	switch {
	case err != nil:
		return nil, 0, "", fmt.Errorf("get bundle: %w", err)
	case e == nil:
		return nil, 0, "", nil
	}
	b = new(dockey.Bundle)
	// Shared with the value, which outlives the comparison: decoded without copies.
	if _, err := dockey.DecodeShared(e.Value(), b, nil); err != nil {
		return nil, e.Revision(), fmt.Sprintf("stored bundle cannot be decoded: %v", err), nil
	}
	projections.EachDocument(b, func(_ string, d *dockey.Document) {
		if string(d.Body) == "null" {
			d.Body = nil // stored for a document that is absent, as a draft's are
		}
	})
	return b, e.Revision(), "", nil
}

// bundleDifference says how the stored bundle got differs from want, the log's rendering; empty
// when it does not.
func bundleDifference(got, want *dockey.Bundle) string {
	switch {
	case got.Revision != want.Revision:
		return fmt.Sprintf("content_revision %d stored, %d replayed", got.Revision, want.Revision)
	case !projections.SameAccess(got, want):
		return "access fields differ (status, api, key, redirects)"
	}
	if changed := projections.ChangedResources(got, want); len(changed) > 0 {
		return fmt.Sprintf("documents differ: %v", changed)
	}
	return ""
}

// aheadDifference says how the stored bundle of a day ahead, got, differs from want, the log's
// rendering of it, beside current, the stored current bundle; empty when it does not. One stored
// where the log makes none is a difference only when a reader would serve it: when it was
// rendered beside current.
func aheadDifference(got, want, current *dockey.Bundle) string {
	switch {
	case want == nil && got == nil:
		return ""
	case want == nil && got.Base == current.Revision:
		return "a day ahead is stored beside the current bundle, and the log makes none"
	case want == nil:
		return "" // rendered beside an earlier bundle: no reader serves it
	case got == nil:
		return "no day ahead stored, the log makes one from " + instant(want.Starts)
	case got.Base != want.Base || got.Starts != want.Starts:
		return fmt.Sprintf("day ahead: beside revision %d from %s stored, beside %d from %s replayed",
			got.Base, instant(got.Starts), want.Base, instant(want.Starts))
	}
	if diff := bundleDifference(got, want); diff != "" {
		return "day ahead: " + diff
	}
	return ""
}

// instant writes the instant unix (Unix seconds) in UTC, as RFC 3339 does.
func instant(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

// eachSlug calls fn for every slug, workers at a time, and then progress, unless nil, with the
// number done and the total. The first failure stops the others and is returned, naming its
// slug: " <slug>: <error>"; so is the end of ctx, as ": <error>".
func eachSlug(ctx context.Context, slugs []string, workers int, progress func(done, total int), fn func(context.Context, string) error) error {
	var (
		done    atomic.Int64
		wg      sync.WaitGroup
		once    sync.Once
		failure error
		jobs    = make(chan string)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Go(func() {
			for slug := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := fn(ctx, slug); err != nil {
					once.Do(func() { failure = fmt.Errorf(" %s: %w", slug, err); cancel() })
					continue
				}
				if n := int(done.Add(1)); progress != nil {
					progress(n, len(slugs))
				}
			}
		})
	}
feed:
	for _, slug := range slugs {
		select {
		case jobs <- slug:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if failure != nil {
		return failure
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf(": %w", err)
	}
	return nil
}
