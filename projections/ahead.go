package projections

import (
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
)

// AheadOf returns e as it will be on its day ahead (domain.Establishment.Ahead): the same
// content with that day recorded. It is nil when e has no day ahead.
func AheadOf(e *domain.Establishment) *domain.Establishment {
	if !e.Created || e.Ahead.IsZero() {
		return nil
	}
	a := *e
	a.Today, a.Ahead, a.AheadStarts = e.Ahead, domain.LocalDate{}, time.Time{}
	return &a
}

// AheadUpdate is the outcome of NextAhead.
type AheadUpdate struct {
	Bundle dockey.Bundle
	// Write says the bundle differs from the stored one and must be stored.
	Write bool
	// None says no bundle of the day ahead is wanted, and a stored one is to be removed: the
	// current bundle is not served, or that day's documents are its own.
	None bool
}

// NextAhead decides the bundle of a day ahead that follows prev, the summary of the stored one
// (nil when none is stored), now that the establishment's content on that day is c, its current
// bundle is the one current describes, and the day starts at the instant starts (Unix seconds).
// It keeps prev's revision while prev's documents are the same and that revision is above the
// current one; else it takes one above both, so that no revision of the establishment ever names
// two contents.
func NextAhead(prev, current *BundleSummary, c Rendering, starts int64) AheadUpdate {
	revision, none := aheadRevision(prev, current, c)
	if none {
		return AheadUpdate{None: true}
	}
	b := c.Bundle(revision)
	b.Base, b.Starts = current.revision, starts
	write := prev == nil || prev.revision != revision || prev.base != b.Base || prev.starts != starts ||
		!SameAccess(&prev.access, &b) || !prev.sameTags(&b)
	return AheadUpdate{Bundle: b, Write: write}
}

// NextAheadSummary decides as NextAhead does, and returns the summary of the bundle it
// returns, with sequence as its Sequence, and whether it is to be written; nil when none is
// wanted. It stamps and copies no document.
func NextAheadSummary(prev, current *BundleSummary, c Rendering, starts int64, sequence uint64) (*BundleSummary, bool) {
	revision, none := aheadRevision(prev, current, c)
	if none {
		return nil, prev != nil
	}
	s := c.summaryAt(revision, sequence)
	s.base, s.starts = current.revision, starts
	write := prev == nil || prev.revision != revision || prev.base != s.base || prev.starts != starts ||
		!SameAccess(&prev.access, &s.access) || !sameTags(prev, s)
	return s, write
}

// aheadRevision returns the revision of the bundle of a day ahead as NextAhead decides it, or
// none when no such bundle is wanted.
func aheadRevision(prev, current *BundleSummary, c Rendering) (revision int64, none bool) {
	if current == nil || !current.Served() || sameDocuments(current, c.summaryAt(current.revision, 0)) {
		return 0, true
	}
	if prev != nil && prev.revision > current.revision && sameDocuments(prev, c.summaryAt(prev.revision, 0)) {
		return prev.revision, false
	}
	revision = current.revision + 1
	if prev != nil {
		revision = max(revision, prev.revision+1)
	}
	return revision, false
}
