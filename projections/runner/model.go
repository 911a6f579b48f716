package runner

import (
	"log/slog"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// model holds establishments rebuilt from their records, each with the summary of the bundle a
// projection of them stores: what verify and the tests replay one establishment at a time into.
// It is used by one goroutine at a time.
type model struct {
	logger *slog.Logger
	byslug map[string]*tracked
}

// tracked is one establishment: its aggregate and the summary of its stored bundle (nil when none
// is stored).
type tracked struct {
	agg    *domain.Establishment
	seq    uint64 // sequence of the last record applied to agg
	stored *projections.BundleSummary
	// storedValue is the stored bundle's value when the record in hand had the establishment
	// loaded, nil otherwise: the bundles the record writes take their codings from it (codingsFrom).
	storedValue []byte
	// ahead is the summary of the stored bundle of its day ahead, nil when none is; aheadKnown
	// says it was read (see knowAhead).
	ahead      *projections.BundleSummary
	aheadKnown bool
	// changed is the time of the record that last changed the bundle: the one stored or, while
	// replaying, the one the replay would have stored.
	changed time.Time
	// unsaved counts the records applied since agg was read from a stored state, or since it was
	// built from nothing.
	unsaved int
}

func newModel(logger *slog.Logger) *model {
	return &model{logger: logger, byslug: make(map[string]*tracked)}
}

// track returns the establishment of rec, as it stands before rec, or nil when the record names
// no valid establishment.
func (m *model) track(rec events.Record) *tracked {
	slug, err := domain.ParseSlug(rec.Establishment)
	if err != nil {
		m.logger.Warn("skip record of an invalid establishment slug",
			"seq", rec.Sequence, "command", rec.CommandID, "err", err)
		return nil
	}
	t := m.byslug[rec.Establishment]
	if t == nil {
		t = &tracked{agg: domain.New(slug)}
		m.byslug[rec.Establishment] = t
	}
	return t
}

// apply applies the events of rec to t's aggregate. An event that cannot be decoded is logged and
// skipped; the other events of the record still apply, since the log is the truth.
func (t *tracked) apply(logger *slog.Logger, rec events.Record) {
	for _, env := range rec.Events {
		ev, err := domain.DecodeEventWith(env.Type, env.SchemaVersion, env.Payload, events.Unmarshal)
		if err != nil {
			logger.Warn("skip undecodable event",
				"seq", rec.Sequence, "establishment", rec.Establishment, "event", env.ID,
				"type", env.Type, "schema_version", env.SchemaVersion, "err", err)
			continue
		}
		t.agg.Apply(ev)
	}
	t.seq = rec.Sequence
	t.unsaved++
}

// replay applies rec to t and keeps the summary of the bundle a projection one record at a time
// would have stored, without storing it; files is the base URL of uploaded files.
//
// It decides as project does, from the summaries of the documents rather than the documents: the
// replay of a whole log renders every record and keeps only summaries, so that stamping each
// document with a revision, then hashing it, would be most of its work.
//
// Two kinds of record are decided without rendering the current documents: a record of the next
// day alone (DayAhead), which the current documents do not show, and the start of the day ahead t
// summarizes, whose rendering becomes the current one (startedAhead). In the log of
// establishments whose documents change with the day, followed through their midnights, they are
// most of the records.
func (t *tracked) replay(logger *slog.Logger, files string, rec events.Record, scratch *projections.Scratch) {
	ahead := t.agg.Ahead
	t.apply(logger, rec)
	if !t.agg.Created {
		return
	}
	switch {
	case t.stored != nil && only(rec, domain.TypeDayAhead):
	case t.startedAhead(rec, ahead):
		t.stored = t.ahead.Started(t.seq)
		t.changed = rec.Events[0].Time
	default:
		scratch.Reset() // the rendering summarized last is dead: nextSummary keeps no byte of it
		if s, write := projections.NextSummaryOver(t.stored, t.ahead, t.render(files, scratch), int64(rec.Sequence), t.seq); write {
			t.stored = s
			if len(rec.Events) > 0 {
				t.changed = rec.Events[0].Time
			}
		}
	}
	next := projections.AheadOf(t.agg)
	if next == nil {
		t.ahead = nil
		return
	}
	scratch.Reset()
	c := projections.RenderWith(next, files, scratch)
	if s, write := projections.NextAheadSummary(t.ahead, t.stored, c, t.agg.AheadStarts.Unix(), t.seq); write {
		t.ahead = s
	}
}

// startedAhead reports whether rec, just applied, recorded nothing but the start of the day
// ahead, ahead, that t.ahead summarizes beside the current bundle t.stored: t's content is then
// the one that day was rendered from (projections.AheadOf), and the current bundle takes that
// day's documents and revision (projections.BundleSummary.Started). t.ahead was decided after the
// record before, beside t.stored as it is.
func (t *tracked) startedAhead(rec events.Record, ahead domain.LocalDate) bool {
	return !ahead.IsZero() && t.agg.Today == ahead && t.agg.Ahead.IsZero() && only(rec, domain.TypeDayStarted) &&
		t.ahead != nil && t.stored != nil && t.stored.Served() && t.ahead.Base() == t.stored.Revision()
}

// only reports whether rec holds events, all of type typ.
func only(rec events.Record, typ string) bool {
	for _, env := range rec.Events {
		if env.Type != typ {
			return false
		}
	}
	return len(rec.Events) > 0
}

// project decides what follows the stored bundle of t now that its aggregate changed, with
// floor the stream sequence of the change, files the base URL of uploaded files. ok is false
// while the establishment does not exist: it has no bundle.
func (t *tracked) project(floor uint64, files string) (u projections.Update, ok bool) {
	if !t.agg.Created {
		return projections.Update{}, false
	}
	u = projections.NextOver(t.stored, t.ahead, t.render(files, nil), int64(floor))
	u.Bundle.Sequence = t.seq
	return u, true
}

// projectAhead decides what follows the stored bundle of t's day ahead, now that its current
// bundle is the one current describes; files is the base URL of uploaded files.
func (t *tracked) projectAhead(current *projections.BundleSummary, files string) projections.AheadUpdate {
	next := projections.AheadOf(t.agg)
	if next == nil {
		return projections.AheadUpdate{None: true}
	}
	a := projections.NextAhead(t.ahead, current, projections.RenderWith(next, files, nil), t.agg.AheadStarts.Unix())
	a.Bundle.Sequence = t.seq
	return a
}

// currentRendering returns the rendering of t's aggregate and t.stored, the summary of the
// bundle a projection of t's records stored, when there is one; files is the base URL of
// uploaded files. While no record since wrote another, the rendering at the summary's revision is
// that bundle (bundleOf).
func (t *tracked) currentRendering(files string) (projections.Rendering, *projections.BundleSummary) {
	if t.stored == nil {
		return projections.Rendering{}, nil
	}
	return t.render(files, nil), t.stored
}

// aheadRendering returns, as currentRendering does, the rendering of t's day ahead and t.ahead,
// the summary of its bundle, when there is one.
func (t *tracked) aheadRendering(files string) (projections.Rendering, *projections.BundleSummary) {
	next := projections.AheadOf(t.agg)
	if t.ahead == nil || next == nil {
		return projections.Rendering{}, nil
	}
	return projections.RenderWith(next, files, nil), t.ahead
}

// bundleOf returns the bundle s summarizes, its documents those of c, nil when s is nil.
func bundleOf(c projections.Rendering, s *projections.BundleSummary) *dockey.Bundle {
	if s == nil {
		return nil
	}
	b := c.Bundle(s.Revision())
	b.Sequence, b.Base, b.Starts = s.Sequence(), s.Base(), s.Starts()
	return &b
}

// render renders t's aggregate, giving uploaded files their URLs under files, its documents
// encoded into scratch unless nil.
func (t *tracked) render(files string, scratch *projections.Scratch) projections.Rendering {
	return projections.RenderWith(t.agg, files, scratch)
}
