package runner

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// stateEvery is how many records an establishment takes in before the projector, letting go of
// it, writes its state: fewer are read again from the log when it next has a record. Most
// establishments take in one record a day, so most are never written at all.
const stateEvery = 8

// lane is one projector worker's share of the establishments: the ones it projected most recently,
// at most a fixed number of them. Any other is loaded when a record of its arrives: its state as
// the projector last wrote it, the records of the log since, and the summary of its stored bundle.
// A lane is used by its worker's goroutine only.
type lane struct {
	p       *Projector
	cache   *simplelru.LRU[string, *tracked]
	evicted []*tracked // let go of by the cache, their state still to write
	// replay is the generation of the replay of the whole log under way, zero while following.
	// While replaying, what is stored is not the replay's yet: every establishment let go of is
	// written with the replay's summary, and a replay lane reads no state of another replay.
	replay int64
	// kept holds, while replaying, the establishments let go of whose state is too large to save:
	// the replay could not rebuild their summary otherwise.
	kept map[string]*tracked
	// saved names, while replaying, the establishments whose state the lane wrote: the only
	// states of the replay it reads back (see load). It grows only when the cache lets go of
	// establishments in the middle of a pass, which the passes are sized to make rare.
	saved map[string]struct{}
	// scratch is where the lane's replays encode the documents they summarize.
	scratch projections.Scratch
}

func newLane(p *Projector, size int) *lane {
	l := &lane{p: p}
	l.cache, _ = simplelru.NewLRU(max(size, 1), func(_ string, t *tracked) {
		l.evicted = append(l.evicted, t)
	})
	return l
}

// establishment returns the establishment of rec as it stands before rec, or after it when the
// lane holds it and rec is delivered again (its seq is then rec's or later); nil when rec names no
// valid establishment.
func (l *lane) establishment(ctx context.Context, rec events.Record) (*tracked, error) {
	if t, ok := l.cache.Get(rec.Establishment); ok {
		return t, nil
	}
	slug, err := domain.ParseSlug(rec.Establishment)
	if err != nil {
		l.p.logger.Warn("skip record of an invalid establishment slug",
			"seq", rec.Sequence, "command", rec.CommandID, "err", err)
		return nil, nil
	}
	t, err := l.load(ctx, slug, rec)
	if err != nil {
		return nil, err
	}
	l.cache.Add(rec.Establishment, t)
	return t, l.letGo(ctx)
}

// load rebuilds the establishment slug up to the record before next: from its saved state when
// there is one it can use, and the records of the log after that state; its stored bundle is read
// from the bucket, for its summary, and its value kept for the record in hand
// (tracked.storedValue). The records are read back from the one next follows, each through the
// one it follows (events.Store.Chain), when they all say which that is: the records of one
// establishment lie far apart in a large log, and a read under its subject would have the server
// look through every block in between.
//
// While replaying, the log is read from its start and every record of the lane's establishments
// reaches the lane in order: an establishment met for the first time is met at its first record,
// and one let go of had taken in every record before the one in hand. Nothing is read from the log
// then, and no state but one the lane wrote itself, since any other of the replay's states is
// ahead of the establishment's first record (the lane's pass was made again after a failure). An
// establishment whose state the lane wrote but cannot read back is rebuilt whole.
func (l *lane) load(ctx context.Context, slug domain.Slug, next events.Record) (*tracked, error) {
	before := next.Sequence
	t, err := l.savedState(ctx, slug)
	if err != nil {
		return nil, err
	}
	if t != nil && t.seq >= before {
		// A state ahead of the record in hand was saved by a replay, or before the log was
		// replaced: it says nothing of what is stored. The establishment is rebuilt whole.
		t = nil
	}
	if t == nil {
		t = &tracked{agg: domain.New(slug)}
	}
	if l.replay != 0 {
		if _, wrote := l.saved[string(slug)]; t.seq > 0 || !wrote {
			return t, nil
		}
	} else if t.stored, t.storedValue, err = l.p.summaryAt(ctx, l.p.cfg.KV, dockey.Key(string(slug))); err != nil {
		return nil, err
	}
	if t.seq+1 < before {
		var recs []events.Record
		err := l.p.retry(ctx, "read records of "+string(slug), func() (err error) {
			if next.PreviousKnown {
				var ok bool
				if recs, ok, err = l.p.cfg.Store.Chain(ctx, string(slug), t.seq, next.Previous); ok || err != nil {
					return err
				}
			}
			// An unreadable message was logged when the log was read: it is passed over again.
			recs, err = l.p.cfg.Store.Before(ctx, string(slug), t.seq+1, before, func(uint64, error) {})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if l.replay != 0 {
				t.replay(l.p.logger, l.p.cfg.FilesURL, rec, &l.scratch)
			} else {
				t.apply(l.p.logger, rec)
			}
		}
	}
	return t, nil
}

// savedState returns the state the projector wrote for slug, or nil when it holds none this lane
// can use.
func (l *lane) savedState(ctx context.Context, slug domain.Slug) (*tracked, error) {
	if t, ok := l.kept[string(slug)]; ok {
		delete(l.kept, string(slug))
		return t, nil
	}
	if _, ok := l.saved[string(slug)]; l.replay != 0 && !ok {
		return nil, nil
	}
	value, err := l.p.valueAt(ctx, l.p.cfg.State, stateKey(string(slug)), "state of "+string(slug))
	if err != nil || value == nil {
		return nil, err
	}
	t, replay, ok := decodeState(slug, l.p.log, value)
	if !ok || l.replay != 0 && replay != l.replay {
		return nil, nil
	}
	t.unsaved = 0
	return t, nil
}

// letGo writes the state of the establishments the cache let go of: every one while replaying,
// otherwise those that took in stateEvery records or more since their state was last read or
// written.
func (l *lane) letGo(ctx context.Context) error {
	for i, t := range l.evicted {
		l.evicted[i] = nil
		if l.replay == 0 && t.unsaved < stateEvery {
			continue
		}
		if err := l.writeState(ctx, t); err != nil {
			l.evicted = l.evicted[i+1:]
			return err
		}
	}
	l.evicted = l.evicted[:0]
	return nil
}

func (l *lane) writeState(ctx context.Context, t *tracked) error {
	value, err := encodeState(t, l.p.log, l.replay)
	if err != nil {
		return err
	}
	if len(value) > l.p.cfg.MaxValueSize {
		// Not saved: it is rebuilt from the log when next needed, or, while replaying, kept.
		l.p.logger.Warn("state too large to save", "slug", t.agg.Slug, "bytes", len(value), "max_bytes", l.p.cfg.MaxValueSize)
		if l.replay != 0 {
			if l.kept == nil {
				l.kept = make(map[string]*tracked)
			}
			l.kept[string(t.agg.Slug)] = t
		}
		return nil
	}
	key := stateKey(string(t.agg.Slug))
	err = l.p.retry(ctx, "write state of "+string(t.agg.Slug), func() error {
		_, err := l.p.cfg.State.Put(ctx, key, value)
		return err
	})
	if err == nil && l.replay != 0 {
		if l.saved == nil {
			l.saved = make(map[string]struct{})
		}
		l.saved[string(t.agg.Slug)] = struct{}{}
	}
	return err
}

// summaryIn returns the summary of the bundle kv holds for slug, nil when none is.
func (p *Projector) summaryIn(ctx context.Context, kv *Bundles, slug string) (*projections.BundleSummary, error) {
	s, _, err := p.summaryAt(ctx, kv, dockey.Key(slug))
	return s, err
}

// summaryAt returns the summary of the bundle kv holds under key, nil when none is (or one that
// cannot be read, logged), and the bundle's value, nil when none is.
func (p *Projector) summaryAt(ctx context.Context, kv *Bundles, key string) (*projections.BundleSummary, []byte, error) {
	value, err := p.valueAt(ctx, kv, key, "bundle "+key)
	if err != nil || value == nil {
		return nil, nil, err
	}
	return summarize(value, key, p.logger), value, nil
}

// valueAt returns the value kv holds under key, nil when it holds none, retrying until it is read
// or ctx ends; what names it in the logs of the retries.
func (p *Projector) valueAt(ctx context.Context, kv bundleGetter, key, what string) ([]byte, error) {
	var value []byte
	err := p.retry(ctx, "read "+what, func() error {
		e, err := entryAt(ctx, kv, key)
		if e != nil {
			value = e.Value()
		}
		return err
	})
	return value, err
}

// bundleGetter reads one value of a bucket: *Bundles and jetstream.KeyValue are ones.
type bundleGetter interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
}

// entryAt returns what kv holds under key, nil when it holds nothing there.
func entryAt(ctx context.Context, kv bundleGetter, key string) (jetstream.KeyValueEntry, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	return e, err
}

// readSummary returns the summary of the bundle kv holds of slug: nil when it holds none, or one
// that cannot be read, which it logs (it is replaced by the next one stored).
func readSummary(ctx context.Context, kv bundleGetter, slug string, logger *slog.Logger) (*projections.BundleSummary, error) {
	key := dockey.Key(slug)
	e, err := entryAt(ctx, kv, key)
	if e == nil || err != nil {
		return nil, err
	}
	return summarize(e.Value(), key, logger), nil
}

// summarize returns the summary of the bundle value stored under key, nil when it cannot be
// read, which it logs (it is replaced by the next one stored).
func summarize(value []byte, key string, logger *slog.Logger) *projections.BundleSummary {
	s, err := projections.SummarizeStored(value)
	if err != nil {
		logger.Warn("stored bundle cannot be read", "key", key, "err", err)
		return nil
	}
	return s
}
