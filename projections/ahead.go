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
	if current == nil || !current.Served() || sameDocuments(current, c.summaryAt(current.revision, 0)) {
		return AheadUpdate{None: true}
	}
	base := current.revision
	if prev != nil && prev.revision > base {
		b := c.Bundle(prev.revision)
		if len(changedSince(prev, &b)) == 0 {
			b.Base, b.Starts = base, starts
			return AheadUpdate{Bundle: b, Write: prev.base != base || prev.starts != starts ||
				!SameAccess(&prev.access, &b) || !prev.sameTags(&b)}
		}
	}
	revision := base + 1
	if prev != nil {
		revision = max(revision, prev.revision+1)
	}
	b := c.Bundle(revision)
	b.Base, b.Starts = base, starts
	return AheadUpdate{Bundle: b, Write: true}
}
