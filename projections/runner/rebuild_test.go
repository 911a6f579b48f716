package runner

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// TestRebuildNeverGoesBelowTheReplacedGeneration builds a second generation against a first one
// written by "another renderer", then lets the first move on after the build, as its projector
// does until the switch: Settle raises in the new generation every establishment that would go
// back, to the replaced revision when the documents are the same and above it otherwise, and
// touches nothing else. Neither takes a revision the replaced generation's day ahead holds.
func TestRebuildNeverGoesBelowTheReplacedGeneration(t *testing.T) {
	n := newNATSEnv(t)
	const demo, cave = "chez-marcel", "cave-a-vins"
	n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	built := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	ctx := testContext(t)
	put := func(kv jetstream.KeyValue, b dockey.Bundle) { putBundle(t, kv, dockey.Key(b.Slug), b) }
	// The first generation: the demo rendered another way, with a day ahead of its own beside it,
	// the cave as this renderer does.
	other := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	otherAhead := other
	otherAhead.Identity.Name = "Rendu autrement demain"
	ahead := projections.Render(otherAhead, 1001)
	ahead.Base, ahead.Starts = 1000, time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC).Unix()
	putAhead(t, n.kv, ahead)
	other.Identity.Name = "Rendu autrement"
	put(n.kv, projections.Render(other, 1000))
	caveAgg := fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10"))
	put(n.kv, projections.Render(caveAgg, 500))

	next, state, err := OpenGeneration(ctx, n.js, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := startProjectorWith(t, Config{Store: n.store, KV: next, State: state, Replaces: n.kv})
	p.waitFor(t, built)
	if b, _, _ := entry(t, next, demo); b.Revision != 1002 {
		t.Errorf("%s built: revision %d, want 1002 (other documents than the replaced ones at 1000 and their day ahead's at 1001)", demo, b.Revision)
	}
	_, oldCave, _ := entry(t, n.kv, cave)
	if b, value, _ := entry(t, next, cave); b.Revision != 500 || !bytes.Equal(documentsOf(t, value), documentsOf(t, oldCave)) {
		t.Errorf("%s built: revision %d, want the replaced bundle at 500, byte for byte", cave, b.Revision)
	}

	// Both establishments change after the build; the first generation's projector stores them
	// above what the new one stores: the cave with the same documents, the demo with others.
	master := domain.MasterMenuChanged{URL: ptr("https://cdn.cave.example.fr/tout.pdf")}
	n.append(t, cave, master)
	last := n.append(t, demo, domain.MasterMenuChanged{URL: ptr("https://cdn.example.fr/carte.pdf")})
	p.waitFor(t, last)
	if b, _, _ := entry(t, next, cave); b.Revision != 501 {
		t.Fatalf("%s followed: revision %d, want 501", cave, b.Revision)
	}
	caveAgg.Apply(master)
	put(n.kv, projections.Render(caveAgg, 700))
	put(n.kv, projections.Render(other, 2000))
	_, _, demoRev := entry(t, next, demo)

	if err := p.stop(t); err != context.Canceled {
		t.Fatalf("stop: %v", err)
	}
	raised, err := p.Settle(ctx, built+1, p.Position())
	if err != nil || raised != 2 {
		t.Fatalf("settle: %d raised, %v; want 2", raised, err)
	}
	caveNow, caveValue, _ := entry(t, next, cave)
	if caveNow.Revision != 700 {
		t.Errorf("%s settled: revision %d, want 700 (the replaced revision, the same documents)", cave, caveNow.Revision)
	}
	want := projections.Render(caveAgg, 700)
	projections.Compress(&want)
	if wantValue, _ := dockey.EncodeBundle(&want); !bytes.Equal(documentsOf(t, caveValue), documentsOf(t, wantValue)) {
		t.Errorf("%s settled: documents differ from the rendering at 700", cave)
	}
	if b, _, rev := entry(t, next, demo); b.Revision != 2001 || rev == demoRev {
		t.Errorf("%s settled: revision %d, want 2001 (above the replaced 2000, other documents)", demo, b.Revision)
	}
	// Settled, it has nothing more to do.
	if raised, err := p.Settle(ctx, built+1, p.Position()); err != nil || raised != 0 {
		t.Errorf("settle again: %d raised, %v; want 0", raised, err)
	}
}

// documentsOf returns the stored bundle value without its log sequence, which records the record
// that stored it rather than what it holds.
func documentsOf(t *testing.T, value []byte) []byte {
	t.Helper()
	var b dockey.Bundle
	if err := dockey.Decode(value, &b); err != nil {
		t.Fatal(err)
	}
	b.Sequence = 0
	out, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AnnounceSwitch announces what a start of the projector would of each establishment the switch
// changed: a rise of its revision, and a transition whose announcement the replaced generation's
// projector lost; all without a Stored, which would be of the new generation's stream. What was
// announced, a draft never announced, and what the switch left as it was announce nothing.
func TestAnnounceSwitchTellsLostTransitions(t *testing.T) {
	n := newNATSEnv(t)
	ctx := testContext(t)
	next, _, err := OpenGeneration(ctx, n.js, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	const since = 6
	served := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	put := func(kv jetstream.KeyValue, slug string, revision int64, seq uint64, change func(*domain.Establishment)) {
		e := *served
		e.Slug = domain.Slug(slug)
		if change != nil {
			change(&e)
		}
		b := projections.Render(&e, revision)
		b.Sequence = seq
		projections.Compress(&b)
		v, err := dockey.EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, dockey.Key(slug), v); err != nil {
			t.Fatal(err)
		}
	}
	disabled := func(e *domain.Establishment) { e.PublicAPIEnabled, e.APIKeyHash = false, "" }
	draft := func(e *domain.Establishment) { e.Status = domain.StatusDraft }
	for _, slug := range []string{"api-coupee", "brouillon", "inchange", "deja-annonce", "nouveau-contenu"} {
		put(n.kv, slug, 10, 5, nil)
	}
	put(next, "api-coupee", 10, 8, disabled)
	put(next, "brouillon", 12, 9, draft)
	put(next, "inchange", 10, 5, nil)
	put(next, "deja-annonce", 10, 8, disabled)
	put(next, "nouveau-contenu", 15, 8, nil)
	put(next, "brouillon-jamais-vu", 3, 7, draft)
	notifier := &announcer{}
	var announced []Change
	for _, slug := range []string{"api-coupee", "brouillon", "inchange", "deja-annonce", "nouveau-contenu"} {
		announced = append(announced, Change{Slug: slug, Revision: 10, Resources: allDemoResources()})
	}
	announced = append(announced, Change{Slug: "deja-annonce", Revision: 10, Resources: allDemoResources(), Unserved: true, Transition: projections.TransitionUnserved})
	notifier.set(announced)

	count, err := AnnounceSwitch(ctx, AnnounceConfig{Old: n.kv, New: next, Notifier: notifier, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	all := notifier.take()
	notifier.set(all) // what a signal stream keeps, for the second run
	got := slices.Clone(all[len(announced):])
	slices.SortFunc(got, func(a, b Change) int { return strings.Compare(a.Slug, b.Slug) })
	want := []Change{
		{Slug: "api-coupee", Revision: 10, Resources: allDemoResources(), Unserved: true, Transition: projections.TransitionUnserved},
		{Slug: "brouillon", Revision: 12, Resources: []string{"establishment", "hours", "menus", "jsonld"}, Unserved: true, Transition: projections.TransitionUnserved},
		{Slug: "nouveau-contenu", Revision: 15, Resources: allDemoResources()},
	}
	if diff := cmp.Diff(want, got); diff != "" || count != len(want) {
		t.Errorf("announced %d (-want +got):\n%s", count, diff)
	}
	for _, c := range want {
		if stored := notifier.lastStored(c.Slug); stored != 0 {
			t.Errorf("%s: announced with Stored %d, want none", c.Slug, stored)
		}
	}
	if count, err := AnnounceSwitch(ctx, AnnounceConfig{Old: n.kv, New: next, Notifier: notifier, Since: since}); err != nil || count != 0 {
		t.Errorf("announcing the switch again: %d announced, %v; want none", count, err)
	}
}
