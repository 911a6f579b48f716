package runner

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// aheadEntry returns the stored bundle of slug's day ahead, and whether there is one.
func aheadEntry(t *testing.T, kv jetstream.KeyValue, slug string) (dockey.Bundle, bool) {
	t.Helper()
	e, err := kv.Get(testContext(t), dockey.AheadKey(slug))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return dockey.Bundle{}, false
	}
	if err != nil {
		t.Fatalf("get the day ahead of %s: %v", slug, err)
	}
	var b dockey.Bundle
	if err := dockey.Decode(e.Value(), &b); err != nil {
		t.Fatalf("decode the day ahead of %s: %v", slug, err)
	}
	return b, true
}

// The projector stores the next day's documents beside the current ones once the day is
// prepared, announcing nothing; the day started, the current bundle takes the day ahead's
// documents and revision, announced, and the day ahead is removed. A replay of the log into an
// empty bucket, and verify, find the same revisions.
func TestProjectorKeepsTheDayAhead(t *testing.T) {
	n := newNATSEnv(t)
	const demo = "chez-marcel"
	rec := &recorder{}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: rec})
	seq := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	p.waitFor(t, seq)
	current, _, _ := entry(t, n.kv, demo)
	if !projections.Served(&current) {
		t.Fatal("the demo establishment is not served")
	}
	rec.take()

	starts := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	seq = n.append(t, demo, domain.DayAhead{Date: fixture.Date(t, "2026-11-23"), Starts: starts})
	p.waitFor(t, seq)
	ahead, ok := aheadEntry(t, n.kv, demo)
	if !ok {
		t.Fatal("no day ahead stored")
	}
	if ahead.Revision != current.Revision+1 || ahead.Base != current.Revision || ahead.Starts != starts.Unix() || ahead.Sequence != seq {
		t.Errorf("day ahead: revision %d over %d from %d, sequence %d; want %d over %d from %d, sequence %d",
			ahead.Revision, ahead.Base, ahead.Starts, ahead.Sequence, current.Revision+1, current.Revision, starts.Unix(), seq)
	}
	if _, _, _ = entry(t, n.kv, demo); len(rec.take()) != 0 {
		t.Error("preparing the day announced a change")
	}
	if now, _, _ := entry(t, n.kv, demo); now.Revision != current.Revision {
		t.Errorf("preparing the day moved the current revision from %d to %d", current.Revision, now.Revision)
	}

	seq = n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")})
	p.waitFor(t, seq)
	day, _, _ := entry(t, n.kv, demo)
	if day.Revision != ahead.Revision {
		t.Errorf("day started at revision %d, want the day ahead's %d", day.Revision, ahead.Revision)
	}
	if diff := projections.ChangedResources(&ahead, &day); len(diff) != 0 {
		t.Errorf("day started: documents differ from the day ahead's in %v", diff)
	}
	want := []Change{{Slug: demo, Revision: ahead.Revision, Resources: []string{"menus", "menus/menu-du-jour", "jsonld"}}}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("day started: changes (-want +got):\n%s", diff)
	}
	if _, ok := aheadEntry(t, n.kv, demo); ok {
		t.Error("the day ahead is still stored once the day started")
	}

	// The whole log replayed into an empty bucket gives the same bytes, revision included.
	fresh, err := n.js.CreateKeyValue(testContext(t), jetstream.KeyValueConfig{Bucket: "REPLAYED", History: 1, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	replayed := startProjectorWith(t, Config{Store: n.store, KV: NewBundles(n.js, fresh), State: n.freshState(t)})
	replayed.waitFor(t, seq)
	_, live, _ := entry(t, n.kv, demo)
	if _, again, _ := entry(t, fresh, demo); !bytes.Equal(live, again) {
		t.Errorf("replayed bundle differs:\nlive     %.200s\nreplayed %.200s", live, again)
	}
	wantVerified(t, n, n.kv, "followed")
}

// A replay of the whole log, into an empty bucket or the live one, and a rebuild's new generation
// hold the day ahead the following of the log stored, byte for byte; settling the new generation
// above the replaced one, and above the replaced one's day ahead, moves its day ahead beside the
// bundle it raised. Verify finds each bucket equal to the log, days ahead included.
func TestReplaysAndRebuildsStoreTheDayAhead(t *testing.T) {
	n := newNATSEnv(t)
	ctx := testContext(t)
	const demo = "chez-marcel"
	p, _ := demoWithDayAhead(t, n)
	// Tomorrow's menu changes: the day ahead alone, at a revision one more above the current one.
	v := nextDaysMenu(t)
	seq := n.append(t, demo, domain.MenuVersionPublished{MenuType: "menu-du-jour", Version: v})
	p.waitFor(t, seq)
	_ = p.stop(t)
	current, _, _ := entry(t, n.kv, demo)
	live, ok := aheadEntry(t, n.kv, demo)
	if !ok || live.Revision != current.Revision+2 {
		t.Fatalf("day ahead stored %t at %d; want one at %d, the current %d and two changes of it", ok, live.Revision, current.Revision+2, current.Revision)
	}
	sameAhead := func(what string, kv jetstream.KeyValue) {
		t.Helper()
		if got, ok := aheadEntry(t, kv, demo); !ok || !cmp.Equal(got, live) {
			t.Errorf("%s: day ahead stored %t, %+v; want the one following the log stored", what, ok, got)
		}
		wantVerified(t, n, kv, what)
	}

	fresh, err := n.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "REPLAYED", History: 1, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	r := startProjectorWith(t, Config{Store: n.store, KV: NewBundles(n.js, fresh), State: n.freshState(t)})
	r.waitFor(t, seq)
	_ = r.stop(t)
	sameAhead("replayed into an empty bucket", fresh)

	if err := n.kv.Delete(ctx, dockey.AheadKey(demo)); err != nil {
		t.Fatal(err)
	}
	replayInPlace(t, n, seq)
	sameAhead("replayed into the live bucket without it", n.kv)

	next, state, err := OpenGeneration(ctx, n.js, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	r = startProjectorWith(t, Config{Store: n.store, KV: next, State: state, Replaces: n.kv})
	r.waitFor(t, seq)
	sameAhead("rebuilt", next)

	// The replaced generation moves on above the new one with other documents, and a day ahead
	// of its own beside them: settling raises the new one's bundle above both, and its day ahead
	// follows.
	other := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	other.Identity.Name = "Rendu autrement"
	replaced := projections.Render(other, current.Revision+10)
	putBundle(t, n.kv, dockey.Key(demo), replaced)
	other.Identity.Name = "Rendu autrement demain"
	replacedAhead := projections.Render(other, replaced.Revision+1)
	replacedAhead.Base, replacedAhead.Starts = replaced.Revision, live.Starts
	projections.Compress(&replacedAhead)
	putAhead(t, n.kv, replacedAhead)
	_ = r.stop(t)
	if raised, err := r.Settle(ctx, 1, seq); err != nil || raised != 1 {
		t.Fatalf("settle: %d raised, %v; want 1", raised, err)
	}
	settled, _, _ := entry(t, next, demo)
	ahead, ok := aheadEntry(t, next, demo)
	if !ok || settled.Revision != replacedAhead.Revision+1 || ahead.Base != settled.Revision || ahead.Revision <= settled.Revision || ahead.Starts != live.Starts {
		t.Errorf("settled: revision %d, day ahead %t at %d beside %d from %d; want %d, one above it beside it from %d",
			settled.Revision, ok, ahead.Revision, ahead.Base, ahead.Starts, replacedAhead.Revision+1, live.Starts)
	}
	wantVerified(t, n, next, "settled")
}

// demoWithDayAhead starts a projector following the log of n, imports the demo on 2026-11-22 and
// prepares its next day, from 23:00 UTC; it returns the projector and the sequence of the
// day-ahead record, both projected.
func demoWithDayAhead(t *testing.T, n *natsEnv) (*running, uint64) {
	t.Helper()
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	p.waitFor(t, n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22"))
	starts := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	seq := n.append(t, "chez-marcel", domain.DayAhead{Date: fixture.Date(t, "2026-11-23"), Starts: starts})
	p.waitFor(t, seq)
	return p, seq
}

// wantVerified fails t unless verify finds kv, the bucket what names, equal to the log of n.
func wantVerified(t *testing.T, n *natsEnv, kv jetstream.KeyValue, what string) {
	t.Helper()
	if rep, err := Verify(testContext(t), VerifyConfig{Log: n.store, KV: kv}); err != nil || rep.Different != 0 {
		t.Errorf("%s: verify: %+v, %v; want no difference", what, rep, err)
	}
}

// putAhead stores b as the day ahead of its establishment in kv, behind the projector's back.
func putAhead(t *testing.T, kv jetstream.KeyValue, b dockey.Bundle) {
	t.Helper()
	putBundle(t, kv, dockey.AheadKey(b.Slug), b)
}

// replayInPlace replays the whole log of n up to seq into its bucket, with a projector of a fresh
// state, and stops it.
func replayInPlace(t *testing.T, n *natsEnv, seq uint64) {
	t.Helper()
	r := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	r.waitFor(t, seq)
	_ = r.stop(t)
}

// nextDaysMenu returns the demo's menu of the day for 2026-11-23 with fewer items.
func nextDaysMenu(t *testing.T) domain.MenuVersion {
	t.Helper()
	e := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	mt, ok := e.MenuType("menu-du-jour")
	if !ok {
		t.Fatal("the demo has no menu of the day")
	}
	for _, v := range mt.Versions {
		if v.ID == "2026-11-23" {
			v.Sections[0].Items = v.Sections[0].Items[:2]
			return v
		}
	}
	t.Fatal("the demo has no menu of the day for 2026-11-23")
	return domain.MenuVersion{}
}

// A replay removes a day ahead stored beside the current bundle where the log makes none: here
// the establishment's documents are no longer served.
func TestReplayRemovesADayAheadTheLogMakesNone(t *testing.T) {
	n := newNATSEnv(t)
	const demo = "chez-marcel"
	p, _ := demoWithDayAhead(t, n)
	ahead, err := n.kv.Get(testContext(t), dockey.AheadKey(demo))
	if err != nil {
		t.Fatal(err)
	}
	seq := n.append(t, demo, domain.PublicAPIDisabled{})
	p.waitFor(t, seq)
	_ = p.stop(t)
	current, _, _ := entry(t, n.kv, demo)
	var stale dockey.Bundle
	if err := dockey.Decode(ahead.Value(), &stale); err != nil {
		t.Fatal(err)
	}
	stale.Base = current.Revision
	putAhead(t, n.kv, stale)

	replayInPlace(t, n, seq)
	if _, ok := aheadEntry(t, n.kv, demo); ok {
		t.Error("a day ahead is still stored beside a bundle not served")
	}
}

// A replay never stores a day ahead under a revision a stored one holds with other documents
// (another renderer's, perhaps served): it takes one above it, and verify finds the log's content
// at that revision no difference.
func TestReplayTakesARevisionAboveAnotherDayAhead(t *testing.T) {
	n := newNATSEnv(t)
	const demo = "chez-marcel"
	p, seq := demoWithDayAhead(t, n)
	_ = p.stop(t)
	current, _, _ := entry(t, n.kv, demo)
	other, ok := aheadEntry(t, n.kv, demo)
	if !ok {
		t.Fatal("no day ahead stored")
	}
	other.Menus.All.Body = []byte(`{"content_revision":` + strconv.FormatInt(other.Revision, 10) + `,"rendu":"autrement"}`)
	other.Menus.All.ETag, other.Menus.All.Gzip = "", nil
	projections.Compress(&other)
	putAhead(t, n.kv, other)

	replayInPlace(t, n, seq)
	ahead, ok := aheadEntry(t, n.kv, demo)
	if !ok || ahead.Revision != other.Revision+1 || ahead.Base != current.Revision {
		t.Errorf("day ahead stored %t at %d beside %d; want one at %d beside %d", ok, ahead.Revision, ahead.Base, other.Revision+1, current.Revision)
	}
	wantVerified(t, n, n.kv, "replayed")
}

// A replay that finds the stored current bundle other than the log's gives the log's content a
// revision above the stored day ahead's too: readers may have been served that day under its
// revision from its midnight, and no revision names two contents.
func TestReplayTakesARevisionAboveTheStoredDayAhead(t *testing.T) {
	n := newNATSEnv(t)
	const demo = "chez-marcel"
	p, seq := demoWithDayAhead(t, n)
	_ = p.stop(t)
	current, _, _ := entry(t, n.kv, demo)
	stored, ok := aheadEntry(t, n.kv, demo)
	if !ok || stored.Revision != current.Revision+1 {
		t.Fatalf("day ahead stored %t at %d; want one at %d", ok, stored.Revision, current.Revision+1)
	}
	other := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	other.Identity.Name = "Rendu autrement"
	putBundle(t, n.kv, dockey.Key(demo), projections.Render(other, current.Revision))

	replayInPlace(t, n, seq)
	replayed, _, _ := entry(t, n.kv, demo)
	if replayed.Revision != stored.Revision+1 {
		t.Errorf("replayed at revision %d; want %d, above the stored day ahead's %d", replayed.Revision, stored.Revision+1, stored.Revision)
	}
	if ahead, ok := aheadEntry(t, n.kv, demo); !ok || ahead.Base != replayed.Revision || ahead.Revision <= replayed.Revision {
		t.Errorf("day ahead stored %t at %d beside %d; want one above %d beside it", ok, ahead.Revision, ahead.Base, replayed.Revision)
	}
	wantVerified(t, n, n.kv, "replayed")
}

// A replay decides the days ahead and their starts without rendering them again as the
// following of the log decides them rendering each: its bundles, each day ahead included, are
// the following's byte for byte, through an access change beside a day ahead, a day started
// from its day ahead, a menu of the day after published and that day prepared, and a day started
// past it.
func TestReplayDecidesDayChangesAsTheFollowing(t *testing.T) {
	n := newNATSEnv(t)
	ctx := testContext(t)
	const demo = "chez-marcel"
	p, _ := demoWithDayAhead(t, n)
	n.append(t, demo, domain.APIKeyRegenerated{KeyHash: domain.NewAPIKey([32]byte{7}).Hash()})
	n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")})
	v := nextDaysMenu(t)
	v.ID, v.ReferenceDate = "2026-11-24", ptr(fixture.Date(t, "2026-11-24"))
	n.append(t, demo, domain.MenuVersionPublished{MenuType: "menu-du-jour", Version: v})
	seq := n.append(t, demo, domain.DayAhead{Date: fixture.Date(t, "2026-11-24"), Starts: time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)})
	p.waitFor(t, seq)
	sameAsFollowed := func(bucket string, seq uint64) {
		t.Helper()
		fresh := n.bucketNamed(t, bucket)
		r := startProjectorWith(t, Config{Store: n.store, KV: fresh, State: n.freshState(t)})
		r.waitFor(t, seq)
		_ = r.stop(t)
		for _, key := range []string{dockey.Key(demo), dockey.AheadKey(demo)} {
			followed, err := n.kv.Get(ctx, key)
			replayed, err2 := fresh.Get(ctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound) && errors.Is(err2, jetstream.ErrKeyNotFound):
			case err != nil || err2 != nil:
				t.Errorf("up to %d, %s: followed %v, replayed %v", seq, key, err, err2)
			case !bytes.Equal(documentsOf(t, followed.Value()), documentsOf(t, replayed.Value())):
				t.Errorf("up to %d, %s differs:\nfollowed %.300s\nreplayed %.300s", seq, key, followed.Value(), replayed.Value())
			}
		}
	}
	if _, err := n.kv.Get(ctx, dockey.AheadKey(demo)); err != nil {
		t.Fatalf("no day ahead stored for 2026-11-24: %v", err)
	}
	sameAsFollowed("REPLAYED1", seq)

	seq = n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-25")})
	p.waitFor(t, seq)
	if _, err := n.kv.Get(ctx, dockey.AheadKey(demo)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a day ahead stored (%v) past the day started", err)
	}
	sameAsFollowed("REPLAYED2", seq)
	wantVerified(t, n, n.kv, "followed")
}

// Settling raises the new generation's bundle above a day ahead the replaced generation holds at
// its revision with other documents, though it is above the replaced bundle: readers may have
// been served that day from its midnight. So too when the replaced bundle's documents are the
// new one's.
func TestSettleRisesAboveTheReplacedDayAhead(t *testing.T) {
	for _, replacedDocs := range []string{"other", "the same"} {
		t.Run(replacedDocs, func(t *testing.T) {
			n := newNATSEnv(t)
			ctx := testContext(t)
			const demo = "chez-marcel"
			p, seq := demoWithDayAhead(t, n)
			_ = p.stop(t)
			next, state, err := OpenGeneration(ctx, n.js, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			r := startProjectorWith(t, Config{Store: n.store, KV: next, State: state, Replaces: n.kv})
			r.waitFor(t, seq)
			_ = r.stop(t)
			cur, _, _ := entry(t, next, demo)

			// The replaced generation: its bundle one below the new one's, its day ahead, of
			// other documents, at the new one's revision.
			e := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
			if replacedDocs == "other" {
				e.Identity.Name = "Rendu autrement"
			}
			replaced := projections.Render(e, cur.Revision-1)
			putBundle(t, n.kv, dockey.Key(demo), replaced)
			e.Identity.Name = "Rendu autrement demain"
			replacedAhead := projections.Render(e, cur.Revision)
			replacedAhead.Base, replacedAhead.Starts = replaced.Revision, cur.Revision
			putAhead(t, n.kv, replacedAhead)

			if raised, err := r.Settle(ctx, 1, seq); err != nil || raised != 1 {
				t.Fatalf("settle: %d raised, %v; want 1", raised, err)
			}
			settled, _, _ := entry(t, next, demo)
			ahead, ok := aheadEntry(t, next, demo)
			if settled.Revision != cur.Revision+1 || !ok || ahead.Base != settled.Revision || ahead.Revision <= settled.Revision {
				t.Errorf("settled at %d, day ahead %t at %d beside %d; want %d, a day ahead above it beside it",
					settled.Revision, ok, ahead.Revision, ahead.Base, cur.Revision+1)
			}
			wantVerified(t, n, next, "settled")
		})
	}
}
