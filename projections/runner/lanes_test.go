package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/fixture"
)

// bucketNamed creates a bundle bucket of its own for one projector of a comparison, which stores
// and reads fingerprints as the service's buckets do.
func (n *natsEnv) bucketNamed(t *testing.T, name string) *Bundles {
	t.Helper()
	return NewBundles(n.js, n.plainBucketNamed(t, name))
}

// plainBucketNamed creates a bundle bucket of its own, without fingerprints.
func (n *natsEnv) plainBucketNamed(t *testing.T, name string) jetstream.KeyValue {
	t.Helper()
	kv, err := n.js.CreateKeyValue(testContext(t), jetstream.KeyValueConfig{Bucket: name, History: 1, MaxValueSize: MaxBundleSize})
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return kv
}

// unprinted returns kv as a *Bundles that stores its bundles without fingerprints, as an earlier
// version did and as one does through a JetStream domain.
func unprinted(js jetstream.JetStream, kv jetstream.KeyValue) *Bundles {
	return &Bundles{KeyValue: kv, js: js}
}

// bucketValues returns every value of kv by key.
func bucketValues(t *testing.T, kv jetstream.KeyValue) map[string][]byte {
	t.Helper()
	ctx := testContext(t)
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		out[key] = e.Value()
	}
	return out
}

// generatedLog appends, interleaved across establishments, the history of copies establishments
// of each fixture: an import, days that change the dated menus, the same import again (no change
// of content), the import of another fixture under the same slug, and a later day; steps from
// to to of these only. It returns the sequence of the last record of the log.
func generatedLog(t *testing.T, n *natsEnv, copies int, from, to int) uint64 {
	t.Helper()
	fixtures := []string{"../testdata/dated/snapshot.json", "../../cmd/publisher/demo.json", "../testdata/uploaded-only/snapshot.json"}
	// snapshot is fixture f imported as slug.
	snapshot := func(f int, slug string) domain.EstablishmentInput {
		s := fixture.ReadSnapshot(t, fixtures[f%len(fixtures)])
		s.Slug = slug
		return s
	}
	// imported is the establishment after its first import, to import onto.
	imported := func(slug string, f int) *domain.Establishment {
		e := domain.New(domain.Slug(slug))
		for _, ev := range fixture.ImportEvents(t, e, snapshot(f, slug)) {
			e.Apply(ev)
		}
		return e
	}
	days := []string{"2026-11-22", "2026-11-23", "2026-11-30", "2026-12-01"}
	steps := []func(slug string, f, i int){
		func(slug string, f, i int) {
			n.append(t, slug, fixture.ImportEvents(t, domain.New(domain.Slug(slug)), snapshot(f, slug))...)
		},
		func(slug string, f, i int) { n.append(t, slug, domain.DayStarted{Date: fixture.Date(t, days[i%2])}) },
		func(slug string, f, i int) { n.append(t, slug, domain.DayStarted{Date: fixture.Date(t, days[2])}) },
		func(slug string, f, i int) {
			if evs := fixture.ImportEvents(t, imported(slug, f), snapshot(f, slug)); len(evs) > 0 {
				n.append(t, slug, evs...)
			}
		},
		func(slug string, f, i int) {
			other := snapshot(f+1, slug)
			other.Status = snapshot(f, slug).Status // an active establishment stays active
			n.append(t, slug, fixture.ImportEvents(t, imported(slug, f), other)...)
		},
		func(slug string, f, i int) { n.append(t, slug, domain.DayStarted{Date: fixture.Date(t, days[3])}) },
	}
	for step := from; step < to; step++ {
		for i := range copies {
			for f := range fixtures {
				steps[step](fmt.Sprintf("gen-%d-%d", f, i), f, i)
			}
		}
	}
	last, err := n.store.LastStreamSequence(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestParallelProjectionStoresWhatSequentialDoes projects the same log one record at a time and
// with eight workers, live and by replay, and finds the same bytes in both buckets: the same
// bundles, revisions, tags and compressed documents, and the same announced revisions.
func TestParallelProjectionStoresWhatSequentialDoes(t *testing.T) {
	n := newNATSEnv(t)
	const copies = 12
	generatedLog(t, n, copies, 0, 3)

	seqKV, parKV := unprinted(n.js, n.plainBucketNamed(t, "SEQ")), n.bucketNamed(t, "PAR") // the same values, with fingerprints or not
	var seqChanges, parChanges recorder
	seqP := startProjectorWith(t, Config{Store: n.store, KV: seqKV, State: n.freshState(t), Notifier: &seqChanges, Workers: 1})
	parP := startProjectorWith(t, Config{Store: n.store, KV: parKV, State: n.freshState(t), Notifier: &parChanges, Workers: 8})
	// The second half arrives while both follow the log.
	last := generatedLog(t, n, copies, 3, 6)
	seqP.waitFor(t, last)
	parP.waitFor(t, last)

	want := bucketValues(t, seqKV)
	if len(want) != 3*copies {
		t.Fatalf("sequential projection stored %d bundles, want %d", len(want), 3*copies)
	}
	compareBuckets(t, "live, eight workers", bucketValues(t, parKV), want)
	if got, want := revisionsBySlug(parChanges.take()), revisionsBySlug(seqChanges.take()); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("announced revisions differ:\n eight workers %v\n one at a time %v", got, want)
	}

	// A replay into an empty bucket stores the same bytes too.
	replayKV := n.bucketNamed(t, "REPLAY")
	replayP := startProjectorWith(t, Config{Store: n.store, KV: replayKV, State: n.freshState(t), Workers: 8})
	replayP.waitFor(t, last)
	compareBuckets(t, "replay, eight workers", bucketValues(t, replayKV), want)

	// A restart over the bucket it left writes nothing and leaves it as it was.
	if err := parP.stop(t); err != nil && err != context.Canceled {
		t.Fatalf("stop: %v", err)
	}
	again := startProjectorWith(t, Config{Store: n.store, KV: parKV, State: n.freshState(t), Notifier: &parChanges, Workers: 8})
	again.waitFor(t, last)
	compareBuckets(t, "after a restart", bucketValues(t, parKV), want)
	if c := parChanges.take(); len(c) != 0 {
		t.Errorf("a restart announced %d changes, want none", len(c))
	}
}

func compareBuckets(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	for key, w := range want {
		if g, ok := got[key]; !ok {
			t.Errorf("%s: %s missing", what, key)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s: %s differs from the projection one record at a time: %.120s, want %.120s", what, key, g, w)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: %s stored, absent from the projection one record at a time", what, key)
		}
	}
}

func revisionsBySlug(changes []Change) map[string][]int64 {
	out := map[string][]int64{}
	for _, c := range changes {
		out[c.Slug] = append(out[c.Slug], c.Revision)
	}
	return out
}

func TestWatermarkReachesOnlyWhatIsFinishedBeforeIt(t *testing.T) {
	w := newWatermark()
	for _, seq := range []uint64{3, 5, 6, 9} {
		w.add(seq)
	}
	steps := []struct {
		finish  uint64
		reached uint64
		moved   bool
	}{
		{6, 0, false}, // 3 and 5 still running
		{3, 3, true},
		{9, 0, false},
		{5, 9, true}, // 5 was the last one before 6 and 9
	}
	for _, s := range steps {
		reached, moved := w.finish(s.finish)
		if reached != s.reached || moved != s.moved {
			t.Fatalf("finish(%d): got %d, %v; want %d, %v", s.finish, reached, moved, s.reached, s.moved)
		}
	}
	if len(w.pending) != 0 || len(w.done) != 0 {
		t.Errorf("watermark holds %d pending and %d done after everything finished", len(w.pending), len(w.done))
	}
}

// A failing source stops the workers, even one that would retry a write until the context ends:
// fanOut returns the source's error instead of waiting for them.
func TestFanOutReturnsWhenTheSourceFails(t *testing.T) {
	failure := errors.New("the log stopped")
	models := []*model{newModel(slog.New(slog.DiscardHandler)), newModel(slog.New(slog.DiscardHandler))}
	done := make(chan error, 1)
	go func() {
		_, err := fanOut(context.Background(), models, recordSlug,
			func(ctx context.Context, _ *model, _ events.Record) error {
				<-ctx.Done() // a write retried until the projector stops
				return ctx.Err()
			},
			func(_ context.Context, dispatch func(events.Record) error) (uint64, error) {
				for i := range 10 {
					if err := dispatch(events.Record{Establishment: fmt.Sprintf("e-%d", i), Sequence: uint64(i + 1)}); err != nil {
						return 0, err
					}
				}
				return 10, failure
			})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, failure) {
			t.Errorf("fanOut: got %v, want the source's error", err)
		}
	case <-testContext(t).Done():
		t.Fatal("fanOut did not return after its source failed")
	}
}

// A replay's passes are sized for each lane's share of a pass to fit its part of the cache,
// whatever the number of lanes: shares fall by hash, unevenly.
func TestReplayPassesFitEachLane(t *testing.T) {
	t.Parallel()
	const n, size = 20_000, 2_000
	slugs := make([]string, n)
	for i := range slugs {
		slugs[i] = fmt.Sprintf("etablissement-%d", i)
	}
	for _, workers := range []int{1, 2, 4, 8, 32} {
		passes := passesFor(n, size, workers)
		shares := make([]int, passes*workers)
		for _, slug := range slugs {
			shares[passOf(slug, passes)*workers+laneOf(slug, workers)]++
		}
		over := 0
		for _, s := range shares {
			if s > size/workers {
				over++
			}
		}
		// Three standard deviations to spare: about one share in a thousand over.
		if over > 1+len(shares)/100 || passes > 2*n/size {
			t.Errorf("%d lanes: %d passes, %d lane shares of %d over their %d: want at most %d, in at most %d passes",
				workers, passes, over, len(shares), size/workers, 1+len(shares)/100, 2*n/size)
		}
	}
}
