package projections

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/opencarte/publisher/events"
)

// Difference is one establishment whose stored bundle is not what the log renders.
type Difference struct {
	Slug   string `json:"slug"`
	Reason string `json:"reason"`
}

// Report is the outcome of Verify.
type Report struct {
	Position    uint64       `json:"position"`    // last stream sequence replayed
	Checked     int          `json:"checked"`     // establishments compared
	Differences []Difference `json:"differences"` // empty when the bucket is exactly the log's rendering
}

// Verify replays the whole log in memory, as a rebuild into an empty bucket would, and compares
// the result with the bundles stored in the bucket: revision, access fields and every document
// body. It writes nothing, so it can run against a live bucket. Records appended while it runs
// are not compared; a difference on an establishment changed meanwhile can be a race.
func (p *Projector) Verify(ctx context.Context) (Report, error) {
	stored, err := loadBundles(ctx, p.cfg.KV, p.logger)
	if err != nil {
		return Report{}, fmt.Errorf("projections: verify: %w", err)
	}
	m := newModel(p.logger)
	last, err := p.read(ctx, 1, false, func(rec events.Record) error {
		if t := m.apply(rec); t != nil {
			if u, ok := t.project(rec.Sequence); ok && u.write {
				t.stored = &u.bundle
			}
		}
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("projections: verify: replay: %w", err)
	}
	r := Report{Position: last, Differences: []Difference{}}
	diff := func(slug, format string, args ...any) {
		r.Differences = append(r.Differences, Difference{Slug: slug, Reason: fmt.Sprintf(format, args...)})
	}
	for _, slug := range slices.Sorted(maps.Keys(m.byslug)) {
		want := m.byslug[slug].stored
		if want == nil {
			continue
		}
		r.Checked++
		got, ok := stored[slug]
		switch {
		case !ok:
			diff(slug, "no bundle stored")
		case got.Revision != want.Revision:
			diff(slug, "content_revision %d stored, %d replayed", got.Revision, want.Revision)
		case !sameAccess(&got, want):
			diff(slug, "access fields differ (status, api, key, redirects)")
		default:
			if changed := changedResources(&got, want); len(changed) > 0 {
				diff(slug, "documents differ: %v", changed)
			}
		}
	}
	for _, slug := range slices.Sorted(maps.Keys(stored)) {
		if t := m.byslug[slug]; t == nil || t.stored == nil {
			diff(slug, "stored bundle of an establishment absent from the log")
		}
	}
	return r, nil
}
