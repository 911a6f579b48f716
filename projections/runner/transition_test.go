package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// Every write that starts or stops serving an establishment reaches the notifier once, after the
// bundle is stored, with the bucket's sequence of the write: a disabled or enabled API is a
// transition at the same revision listing every resource; a change of content while unserved,
// or an activation, is a change of content marked served or not; a draft, a new key or a
// redirect setting rewrites the bundle and announces nothing.
func TestServedTransitionsAreAnnounced(t *testing.T) {
	n := newNATSEnv(t)
	const demo, bistrot, cave = "chez-marcel", "le-bistrot", "la-cave"
	imported := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	rec := &recorder{}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: rec})
	p.waitFor(t, imported)
	replayed := rec.take()
	if len(replayed) != 1 || replayed[0].Unserved || replayed[0].Transition != "" {
		t.Fatalf("the import announced %+v, want one change of content, served", replayed)
	}
	demoRevision, caveRevision := replayed[0].Revision, int64(0)
	key := func(b byte) string { return domain.NewAPIKey([32]byte{b}).Hash() }
	created := func(name string) []domain.Event {
		return []domain.Event{domain.EstablishmentCreated{TimeZone: "Europe/Paris"},
			domain.IdentityChanged{Identity: domain.Identity{Name: name, BusinessType: "restaurant"}}}
	}
	fixed := []string{"establishment", "hours", "menus", "jsonld"}
	var seq uint64
	steps := []struct {
		name   string
		slug   string
		events []domain.Event
		want   func() []Change // called once the record is projected, seq its sequence
	}{
		{"api disabled", demo, []domain.Event{domain.PublicAPIDisabled{}}, func() []Change {
			return []Change{{Slug: demo, Revision: demoRevision, Resources: allDemoResources(), Unserved: true, Transition: projections.TransitionUnserved}}
		}},
		{"identity while unserved", demo, []domain.Event{domain.IdentityChanged{Identity: domain.Identity{Name: "Chez Marcel et Fils", BusinessType: "restaurant"}}}, func() []Change {
			demoRevision = int64(seq)
			return []Change{{Slug: demo, Revision: demoRevision, Resources: []string{"establishment", "jsonld"}, Unserved: true}}
		}},
		{"api enabled", demo, []domain.Event{domain.PublicAPIEnabled{KeyHash: key(1)}}, func() []Change {
			return []Change{{Slug: demo, Revision: demoRevision, Resources: allDemoResources(), Transition: projections.TransitionServed}}
		}},
		{"new key", demo, []domain.Event{domain.APIKeyRegenerated{KeyHash: key(2)}}, nil},
		{"redirect setting", demo, []domain.Event{domain.MenuRedirectChanged{Enabled: false}}, nil},
		{"draft with its api enabled", bistrot, append(created("Le Bistrot"), domain.PublicAPIEnabled{KeyHash: key(3)}), nil},
		{"activated", bistrot, []domain.Event{domain.Activated{}}, func() []Change {
			return []Change{{Slug: bistrot, Revision: int64(seq), Resources: fixed}}
		}},
		{"draft with its api disabled", cave, created("La Cave"), nil},
		{"activated with its api disabled", cave, []domain.Event{domain.Activated{}}, func() []Change {
			caveRevision = int64(seq)
			return []Change{{Slug: cave, Revision: caveRevision, Resources: fixed, Unserved: true}}
		}},
		{"api enabled once active", cave, []domain.Event{domain.PublicAPIEnabled{KeyHash: key(4)}}, func() []Change {
			return []Change{{Slug: cave, Revision: caveRevision, Resources: fixed, Transition: projections.TransitionServed}}
		}},
	}
	for _, step := range steps {
		before, err := n.kv.sequence(testContext(t), dockey.Key(step.slug))
		if err != nil {
			t.Fatal(err)
		}
		seq = n.append(t, step.slug, step.events...)
		p.waitFor(t, seq)
		b, _, kvRev := entry(t, n.kv, step.slug)
		if kvRev == before {
			t.Errorf("%s: the bundle was not written again", step.name)
		}
		var want []Change
		if step.want != nil {
			want = step.want()
		}
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Errorf("%s: announced (-want +got):\n%s", step.name, diff)
		}
		if want != nil && rec.lastStored(step.slug) != kvRev {
			t.Errorf("%s: announced as stored at %d, the bucket holds it at %d", step.name, rec.lastStored(step.slug), kvRev)
		}
		if want != nil && b.Revision != want[0].Revision {
			t.Errorf("%s: announced revision %d, stored %d", step.name, want[0].Revision, b.Revision)
		}
	}
}
