package runner

import (
	"sync/atomic"
	"testing"

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
