package projections

import (
	"bytes"
	"slices"

	"github.com/opencarte/publisher/projections/dockey"
)

// Update is the outcome of projecting the content of an establishment against its stored bundle.
type Update struct {
	Bundle dockey.Bundle
	// Write says the bundle differs from the stored one and must be stored.
	Write bool
	// Resources lists what to announce: the resources whose bytes changed (establishment, hours,
	// menus, then menus/<slug> by slug, then jsonld) when the revision of a public bundle rose, with every
	// resource the bundle had, or has, when it also stopped or started being served; every
	// resource the bundle had, or has, for a Transition. It is empty when there is nothing to
	// announce.
	Resources []string
	// Transition is "" for a change of content, or TransitionUnserved or TransitionServed when the
	// establishment stopped or started being served (see Served) without a rise of a public
	// bundle's revision: a move to draft (its documents withdrawn), its API disabled or enabled.
	Transition string
}

// Transitions of an Update.
const (
	TransitionUnserved = "unserved"
	TransitionServed   = "served"
)

// Next decides the bundle that follows prev, the summary of the stored bundle (nil when none is
// stored), now that the establishment's content is c. floor is the lowest revision a rise may
// take: the stream sequence of the record that caused the change.
//
// The revision rises, to max(floor, prev.revision+1), exactly when the bytes of at least one
// document differ once both are stamped with the same revision. When only access fields (or entity
// tags) differ, the bundle is rewritten with the stored revision; when nothing differs, nothing is
// written. A revision therefore never goes back, and replaying the same log over the same stored
// bundles gives the same revisions.
//
// A bundle that is not public announces no change of content, whatever changed in it: no one can
// read it. A bundle that stops or starts being served without such a change announces a
// transition, listing every resource it had or has; with such a change, the change lists them
// too, since every one of them became readable or unreadable.
func Next(prev *BundleSummary, c Rendering, floor int64) Update { return NextOver(prev, nil, c, floor) }

// NextOver decides as Next does, beside ahead, the summary of the stored bundle of the
// establishment's day ahead (nil when none is stored; see NextAhead). A rise takes a revision
// above ahead's too, so that no revision names two contents; and content whose documents are
// the day ahead's, once that day is recorded, takes ahead's revision, under which readers were
// served those documents from its midnight.
func NextOver(prev, ahead *BundleSummary, c Rendering, floor int64) Update {
	if ahead != nil {
		floor = max(floor, ahead.revision+1)
	}
	u := nextBundle(prev, ahead, c, floor)
	rose := c.public && len(u.Resources) > 0
	if !rose {
		u.Resources = nil
	}
	switch was, is := prev != nil && prev.Served(), Served(&u.Bundle); {
	case !u.Write || was == is || prev == nil: // a first bundle lists every resource it has
	case rose && was:
		u.Resources = mergeResources(u.Resources, prev.Resources())
	case rose:
		u.Resources = mergeResources(u.Resources, Summarize(&u.Bundle).Resources())
	case was:
		u.Transition, u.Resources = TransitionUnserved, prev.Resources()
	default:
		u.Transition, u.Resources = TransitionServed, Summarize(&u.Bundle).Resources()
	}
	return u
}

func nextBundle(prev, ahead *BundleSummary, c Rendering, floor int64) Update {
	if prev == nil {
		b := c.Bundle(max(floor, 1))
		return Update{Bundle: b, Write: true, Resources: ChangedResources(nil, &b)}
	}
	same := c.Bundle(prev.revision)
	changed := changedSince(prev, &same)
	if len(changed) == 0 {
		return Update{Bundle: same, Write: !SameAccess(&prev.access, &same) || !prev.sameTags(&same)}
	}
	if ahead != nil && ahead.revision > prev.revision && sameDocuments(ahead, c.summaryAt(ahead.revision, 0)) {
		return Update{Bundle: c.Bundle(ahead.revision), Write: true, Resources: changed}
	}
	b := c.Bundle(max(floor, prev.revision+1))
	return Update{Bundle: b, Write: true, Resources: changed}
}

// NextSummaryOver decides as NextOver does, and returns the summary of the bundle NextOver
// returns, with sequence as its Sequence, and whether it is to be written; it stamps and copies
// no document.
func NextSummaryOver(prev, ahead *BundleSummary, c Rendering, floor int64, sequence uint64) (*BundleSummary, bool) {
	if ahead != nil {
		floor = max(floor, ahead.revision+1)
	}
	if prev == nil {
		return c.summaryAt(max(floor, 1), sequence), true
	}
	same := c.summaryAt(prev.revision, sequence)
	if !sameDocuments(prev, same) {
		if ahead != nil && ahead.revision > prev.revision {
			if s := c.summaryAt(ahead.revision, sequence); sameDocuments(ahead, s) {
				return s, true
			}
		}
		return c.summaryAt(max(floor, prev.revision+1), sequence), true
	}
	return same, !SameAccess(&prev.access, &same.access) || !sameTags(prev, same)
}

// ChangedResources lists the resources whose document bytes differ between a and b (a nil a has
// no documents): establishment, hours, menus, then menus/<slug> by slug for every menu detail that
// changed, appeared or disappeared, then jsonld.
func ChangedResources(a, b *dockey.Bundle) []string {
	if a == nil {
		a = &dockey.Bundle{}
	}
	var out []string
	if !sameBody(a.Establishment, b.Establishment) {
		out = append(out, ResourceEstablishment)
	}
	if !sameBody(a.Hours, b.Hours) {
		out = append(out, ResourceHours)
	}
	if !sameVariants(a.Menus, b.Menus) {
		out = append(out, ResourceMenus)
	}
	slugs := make([]string, 0, len(a.MenuDetails)+len(b.MenuDetails))
	for slug := range a.MenuDetails {
		slugs = append(slugs, slug)
	}
	for slug := range b.MenuDetails {
		if _, ok := a.MenuDetails[slug]; !ok {
			slugs = append(slugs, slug)
		}
	}
	slices.Sort(slugs)
	for _, slug := range slugs {
		va, inA := a.MenuDetails[slug]
		vb, inB := b.MenuDetails[slug]
		if inA != inB || !sameVariants(va, vb) {
			out = append(out, MenuResource(slug))
		}
	}
	if !sameBody(a.JSONLD.FR, b.JSONLD.FR) || !sameBody(a.JSONLD.EN, b.JSONLD.EN) {
		out = append(out, ResourceJSONLD)
	}
	return out
}

func sameBody(a, b dockey.Document) bool { return bytes.Equal(a.Body, b.Body) }

func sameVariants(a, b dockey.Variants) bool {
	return sameBody(a.All, b.All) && sameBody(a.FR, b.FR) && sameBody(a.EN, b.EN)
}
