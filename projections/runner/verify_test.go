package runner

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

func TestVerifyComparesTheBucketWithTheLog(t *testing.T) {
	n := newNATSEnv(t)
	n.importFixture(t, "../testdata/draft/snapshot.json", "2026-03-10") // a bundle without documents
	seq := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	r := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	r.waitFor(t, seq)
	seq = n.append(t, "chez-marcel", domain.MenuRedirectChanged{Enabled: false})
	r.waitFor(t, seq)

	cfg := VerifyConfig{Log: n.store, KV: n.kv}
	rep, err := Verify(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 2 || len(rep.Differences) != 0 || rep.Position != seq {
		t.Fatalf("live bucket: got %+v, want 2 checked, no difference, position %d", rep, seq)
	}

	// A bundle altered behind the projector's back is reported, by slug.
	_ = r.stop(t) // Run returns the cancellation
	b, _, _ := entry(t, n.kv, "chez-marcel")
	b.Hours.Body = []byte(`{"content_revision":1}`)
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.kv.Put(testContext(t), "est.chez-marcel", value); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].Slug != "chez-marcel" {
		t.Errorf("altered bundle: got %+v, want one difference on chez-marcel", rep.Differences)
	}
}

// TestVerifyListsABoundedNumberOfDifferences counts every different establishment but lists at
// most MaxDifferences of them, the first by slug.
func TestVerifyListsABoundedNumberOfDifferences(t *testing.T) {
	n := newNATSEnv(t)
	slugs := []string{"diff-a", "diff-b", "diff-c"}
	var seq uint64
	for _, slug := range slugs {
		s := fixture.ReadSnapshot(t, "../../cmd/publisher/demo.json")
		s.Slug = slug
		n.append(t, slug, fixture.ImportEvents(t, domain.New(domain.Slug(slug)), s)...)
		seq = n.append(t, slug, domain.DayStarted{Date: fixture.Date(t, "2026-11-22")})
	}
	r := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	r.waitFor(t, seq)
	_ = r.stop(t)
	for _, slug := range slugs {
		b, _, _ := entry(t, n.kv, slug)
		b.Revision++
		value, err := dockey.EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.kv.Put(testContext(t), dockey.Key(slug), value); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int64
	rep, err := Verify(testContext(t), VerifyConfig{Log: n.store, KV: n.kv, MaxDifferences: 2,
		Progress: func(done, total int) {
			calls.Add(1)
			if done < 1 || done > total || total != len(slugs) {
				t.Errorf("progress %d of %d, want at most %d of %d", done, total, len(slugs), len(slugs))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 3 || rep.Different != 3 || len(rep.Differences) != 2 ||
		rep.Differences[0].Slug != "diff-a" || rep.Differences[1].Slug != "diff-b" {
		t.Errorf("got %d checked, %d different, listed %+v; want 3, 3 and the first two by slug", rep.Checked, rep.Different, rep.Differences)
	}
	if calls.Load() != int64(len(slugs)) {
		t.Errorf("progress called %d times, want once per establishment", calls.Load())
	}
}

// TestVerifyComparesTheDayAhead checks the bundle of a day ahead as it does the current one: the
// one following the log stored is no difference; one altered, missing, or stored beside the
// current bundle where the log makes none is; one left beside an earlier bundle, which no reader
// serves, is not.
func TestVerifyComparesTheDayAhead(t *testing.T) {
	n := newNATSEnv(t)
	const demo = "chez-marcel"
	cfg := Config{Store: n.store, KV: n.kv, State: n.freshState(t)}
	r := startProjectorWith(t, cfg)
	r.waitFor(t, n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22"))
	starts := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	r.waitFor(t, n.append(t, demo, domain.DayAhead{Date: fixture.Date(t, "2026-11-23"), Starts: starts}))
	_ = r.stop(t)
	ahead, ok := aheadEntry(t, n.kv, demo)
	if !ok {
		t.Fatal("no day ahead stored")
	}
	check := func(what string, cfg VerifyConfig, want string) {
		t.Helper()
		cfg.Log, cfg.KV = n.store, n.kv
		rep, err := Verify(testContext(t), cfg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var got string
		if len(rep.Differences) > 0 {
			got = rep.Differences[0].Reason
		}
		if rep.Checked != 1 || rep.Different != len(rep.Differences) || !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: %d checked, differences %+v; want one checked and a difference starting %q", what, rep.Checked, rep.Differences, want)
		}
	}
	check("as stored", VerifyConfig{}, "")

	altered := ahead
	altered.Menus.All.Body = []byte(`{"content_revision":0}`)
	putAhead(t, n.kv, altered)
	check("altered", VerifyConfig{}, "day ahead: documents differ: [menus]")
	moved := ahead
	moved.Starts += 3600
	putAhead(t, n.kv, moved)
	check("another start", VerifyConfig{}, "day ahead: beside revision")

	if err := n.kv.Delete(testContext(t), dockey.AheadKey(demo)); err != nil {
		t.Fatal(err)
	}
	check("removed", VerifyConfig{}, "no day ahead stored, the log makes one from 2026-11-22T23:00:00Z")

	// Once the day started, the log makes none.
	r = startProjectorWith(t, cfg)
	r.waitFor(t, n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")}))
	_ = r.stop(t)
	if _, ok := aheadEntry(t, n.kv, demo); ok {
		t.Fatal("the day ahead is still stored once the day started")
	}
	current, _, _ := entry(t, n.kv, demo)
	stale := ahead
	stale.Base = current.Revision
	putAhead(t, n.kv, stale)
	check("stored beside the current bundle", VerifyConfig{}, "a day ahead is stored beside the current bundle")
	putAhead(t, n.kv, ahead) // beside the bundle before the day started
	check("left beside an earlier bundle", VerifyConfig{}, "")
}

// The projector stores a record's day ahead before its current bundle, and removes a day ahead
// after the current bundle that took it: verify, up to the projector's position before that
// record, finds no difference in a bucket caught between the two writes, whether the record
// changes the current revision or, an access change, keeps it.
func TestVerifyUpToSeesABucketBetweenTheWritesOfARecord(t *testing.T) {
	n := newNATSEnv(t)
	ctx := testContext(t)
	const demo = "chez-marcel"
	p, prepared := demoWithDayAhead(t, n)
	_, before, _ := entry(t, n.kv, demo)
	check := func(what string) {
		t.Helper()
		rep, err := Verify(ctx, VerifyConfig{Log: n.store, KV: n.kv, UpTo: prepared})
		if err != nil || rep.Different != 0 {
			t.Errorf("%s: %+v, %v; want no difference", what, rep, err)
		}
	}
	put := func(key string, value []byte) {
		t.Helper()
		if _, err := n.kv.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}

	e := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	id := e.Identity
	id.Name = "Autre nom"
	changed := n.append(t, demo, domain.IdentityChanged{Identity: id})
	p.waitFor(t, changed)
	_, after, _ := entry(t, n.kv, demo)
	aheadAfter, err := n.kv.Get(ctx, dockey.AheadKey(demo))
	if err != nil {
		t.Fatal(err)
	}
	put(dockey.Key(demo), before) // its day ahead stored, its current bundle not yet
	check("a change's day ahead stored before its current bundle")
	put(dockey.Key(demo), after)
	put(dockey.AheadKey(demo), aheadAfter.Value())

	// An access change keeps the revision: its day ahead is beside the bundle read.
	p.waitFor(t, n.append(t, demo, domain.APIKeyRegenerated{KeyHash: domain.NewAPIKey([32]byte{9}).Hash()}))
	put(dockey.Key(demo), after)
	check("an access change's day ahead stored before its current bundle")

	p.waitFor(t, n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")}))
	_ = p.stop(t)
	put(dockey.AheadKey(demo), aheadAfter.Value()) // the day started, its day ahead not yet removed
	check("a day started before its day ahead is removed")
}
