package runner

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// The bundle of a day ahead (domain.Establishment.Ahead) is stored beside the current bundle,
// under dockey.AheadKey, while the establishment has a day ahead whose documents differ from
// its current ones: the read API serves it from the day's midnight on, as long as the current
// bundle is the one it was rendered beside, and the day-started event that follows makes its
// documents and revision the current bundle's (projections.NextOver).
//
// The following of the log stores it as each record asks. A replay of the whole log follows the
// days ahead in summaries, for the revisions of the current bundles to be the ones the following
// of the log gives, and once it has settled an establishment's current bundle, stores its day
// ahead beside it (settleAhead): a replay or a rebuild in the hour before a midnight leaves the
// day ready for it. One left behind is served by no reader once the current bundle moves on.
// Verify compares the stored ones with the log's.

// knowAhead reads the summary of the stored bundle of t's day ahead, once, when t has or had
// one (had: before the record in hand): otherwise none is stored. It returns the bundle's value
// when it read one, for codingsOfAhead, nil otherwise.
func (p *Projector) knowAhead(ctx context.Context, t *tracked, had bool) ([]byte, error) {
	switch {
	case t.aheadKnown:
		return nil, nil
	case !had && t.agg.Ahead.IsZero():
		t.ahead = nil // what a replay's state said of it, if anything, is not the bucket's
		return nil, nil
	}
	s, value, err := p.summaryAt(ctx, p.cfg.KV, dockey.AheadKey(string(t.agg.Slug)))
	if err != nil {
		return nil, err
	}
	t.ahead, t.aheadKnown = s, true
	return value, nil
}

// settleAhead stores the bundle of t's day ahead beside its current bundle as stored (t.stored),
// once a replay or a rebuild has settled that one, unless the stored one is that bundle; or
// removes the stored one when the log makes none though the establishment has a day ahead (its
// documents are the current ones). Its revision is the one the replay followed (t.ahead), as the
// following of the log gives it, unless the stored one holds that revision or a later one with
// other documents (another renderer's, served perhaps): then one above it, as for any bundle. It
// reads the bucket only for an establishment with a day ahead: in the hour before a zone's
// midnight, every date-dependent one of the zone.
func (p *Projector) settleAhead(ctx context.Context, t *tracked) error {
	if t.stored == nil || t.agg.Ahead.IsZero() {
		return nil
	}
	stored, _, err := p.summaryAt(ctx, p.cfg.KV, dockey.AheadKey(string(t.agg.Slug)))
	if err != nil {
		return err
	}
	if t.ahead == nil {
		t.ahead = stored
	}
	a := t.projectAhead(t.stored, p.cfg.FilesURL)
	if !a.None && stored != nil && stored.Revision() >= a.Bundle.Revision && !stored.Same(projections.Summarize(&a.Bundle)) {
		t.ahead = stored
		a = t.projectAhead(t.stored, p.cfg.FilesURL)
	}
	t.ahead, t.aheadKnown = stored, true
	if a.None {
		return p.dropAhead(ctx, t, a)
	}
	a.Write = !stored.Same(projections.Summarize(&a.Bundle))
	return p.storeAhead(ctx, t, a)
}

// nextBeside decides, as projections.Next does, the bundle that follows prev, the summary of the
// current bundle kv holds for slug, now that its content is c; and above the revision of the
// bundle of a day ahead kv holds, whatever it was rendered beside, unless c's documents are that
// day's (nextAbove): readers may have been served the day under its revision from its midnight,
// and no revision names two contents. A replay or a rebuild, whose following of the log knows
// nothing of what the bucket held, decides so. A bucket that holds no current bundle serves no
// day ahead: nothing more is read.
func (p *Projector) nextBeside(ctx context.Context, kv *Bundles, slug string, prev *projections.BundleSummary, c projections.Rendering, floor int64) (projections.Update, error) {
	if prev == nil {
		return projections.Next(nil, c, floor), nil
	}
	ahead, _, err := p.summaryAt(ctx, kv, dockey.AheadKey(slug))
	if err != nil {
		return projections.Update{}, err
	}
	return nextAbove(prev, ahead, c, floor), nil
}

// nextAbove decides as projections.NextOver does beside ahead, the summary of a stored day
// ahead (nil for none), when its revision is floor or more; below, any rise takes a revision above
// it, and its own would send the revision below floor.
func nextAbove(prev, ahead *projections.BundleSummary, c projections.Rendering, floor int64) projections.Update {
	if ahead != nil && ahead.Revision() < floor {
		ahead = nil
	}
	return projections.NextOver(prev, ahead, c, floor)
}

// servedBelow reports whether readers may have been served a revision at or above cur's with
// other documents: a, the summary of the stored day ahead beside the bundle a switch replaces
// (nil for none), is above cur, or at its revision with other documents or access.
func servedBelow(cur, a *projections.BundleSummary) bool {
	return a != nil && (cur.Revision() < a.Revision() || cur.Revision() == a.Revision() && !a.Started(cur.Sequence()).Same(cur))
}

// storeAhead stores the bundle of a day ahead a decided.
func (p *Projector) storeAhead(ctx context.Context, t *tracked, a projections.AheadUpdate) error {
	if !a.Write {
		return nil
	}
	_, ok, err := p.put(ctx, dockey.AheadKey(a.Bundle.Slug), &a.Bundle)
	if ok {
		t.ahead = projections.Summarize(&a.Bundle)
	}
	return err
}

// codingsOfAhead gives b, about to be stored as t's current bundle, the gzip codings of the
// stored bundle of t's day ahead when b takes its revision (the day started, its documents
// unchanged): of the documents whose bodies are the same, which is all of them unless something
// changed since (projections.CodingsFrom). value is the day ahead's bundle when knowAhead read it
// for the record in hand; otherwise it is read. A day ahead that cannot be read gives none.
func (p *Projector) codingsOfAhead(ctx context.Context, t *tracked, b *dockey.Bundle, value []byte) error {
	if t.ahead == nil || b.Revision != t.ahead.Revision() {
		return nil
	}
	if value == nil {
		key := dockey.AheadKey(b.Slug)
		var err error
		if value, err = p.valueAt(ctx, p.cfg.KV, key, "bundle "+key); err != nil {
			return err
		}
	}
	codingsFrom(b, value)
	return nil
}

// codingsFrom gives b the codings of the bundles stored as values that it can take
// (projections.CodingsFrom), from the first value on: nil ones are passed over, and one that
// cannot be decoded gives none, its documents compressed again as any.
func codingsFrom(b *dockey.Bundle, values ...[]byte) {
	for _, value := range values {
		if value == nil {
			continue
		}
		var from dockey.Bundle
		if _, err := dockey.DecodeShared(value, &from, nil); err == nil {
			projections.CodingsFrom(b, &from)
		}
	}
}

// dropAhead removes the stored bundle of t's day ahead, when there is one and a wants none.
func (p *Projector) dropAhead(ctx context.Context, t *tracked, a projections.AheadUpdate) error {
	if !a.None || t.ahead == nil {
		return nil
	}
	key := dockey.AheadKey(string(t.agg.Slug))
	err := p.retry(ctx, "remove bundle "+key, func() error {
		err := p.cfg.KV.Delete(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	})
	if err == nil {
		t.ahead = nil
	}
	return err
}
