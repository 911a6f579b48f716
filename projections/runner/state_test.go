package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// countingLog is the event log, counting the passes of replays of the whole log and the reads of
// one establishment's records.
type countingLog struct {
	*events.Store
	replays, befores, chains atomic.Int32
}

func (c *countingLog) Chain(ctx context.Context, slug string, after, last uint64) ([]events.Record, bool, error) {
	c.chains.Add(1)
	return c.Store.Chain(ctx, slug, after, last)
}

func (c *countingLog) Before(ctx context.Context, slug string, from, before uint64, unreadable func(uint64, error)) ([]events.Record, error) {
	c.befores.Add(1)
	return c.Store.Before(ctx, slug, from, before, unreadable)
}

// countingBucket is a bucket of bundles counting the reads of one bundle.
type countingBucket struct {
	jetstream.KeyValue
	gets atomic.Int32
}

func (c *countingBucket) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	c.gets.Add(1)
	return c.KeyValue.Get(ctx, key)
}

func (c *countingLog) ReplayPart(ctx context.Context, from, to uint64, keep func(string) bool, fn func(events.Record) error, other func(string, uint64, []byte) error, unreadable func(uint64, error)) error {
	c.replays.Add(1)
	return c.Store.ReplayPart(ctx, from, to, keep, fn, other, unreadable)
}

// dayRecords appends rounds of days to every establishment generatedLog made, each round
// changing the dated menus, and returns the sequence of the last record.
func dayRecords(t *testing.T, n *natsEnv, copies, from, to int) uint64 {
	t.Helper()
	days := []string{"2026-11-22", "2026-11-23"}
	var last uint64
	for r := from; r < to; r++ {
		for i := range copies {
			for f := range 3 {
				last = n.append(t, fmt.Sprintf("gen-%d-%d", f, i), domain.DayStarted{Date: fixture.Date(t, days[r%2])})
			}
		}
	}
	return last
}

func stateKeys(t *testing.T, kv jetstream.KeyValue) []string {
	t.Helper()
	var keys []string
	for key := range bucketValues(t, kv) {
		if strings.HasPrefix(key, stateKeyPrefix) {
			keys = append(keys, key)
		}
	}
	return keys
}

func logIdentity(t *testing.T, n *natsEnv) string {
	t.Helper()
	id, err := n.store.Identity(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func identityOf(t *testing.T, kv *Bundles) string {
	t.Helper()
	id, err := kv.identity(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBoundedProjectorStoresWhatAnUnboundedOneDoes projects the same log holding one
// establishment per worker in memory and holding them all, live, after a crash between writing
// states and moving the checkpoint, and by replay, and finds the same bytes every time.
func TestBoundedProjectorStoresWhatAnUnboundedOneDoes(t *testing.T) {
	n := newNATSEnv(t)
	const copies = 6
	first := generatedLog(t, n, copies, 0, 3)

	allKV, boundedKV := n.bucketNamed(t, "ALL"), n.bucketNamed(t, "BOUNDED")
	boundedState := n.freshState(t)
	var allChanges, boundedChanges recorder
	all := startProjectorWith(t, Config{Store: n.store, KV: allKV, State: n.freshState(t), Notifier: &allChanges, Workers: 1, CacheSize: 1000})
	boundedLog := &countingLog{Store: n.store}
	bounded := startProjectorWith(t, Config{Store: boundedLog, KV: boundedKV, State: boundedState, Notifier: &boundedChanges, Workers: 2, CacheSize: 2})
	// Both replay the same records, then follow the others.
	all.waitFor(t, first)
	bounded.waitFor(t, first)
	mid := generatedLog(t, n, copies, 3, 6)
	// Enough records per establishment for the states of those let go of to be written.
	last := dayRecords(t, n, copies, 0, 2*stateEvery)
	all.waitFor(t, last)
	bounded.waitFor(t, last)

	want := bucketValues(t, allKV)
	if len(want) != 3*copies {
		t.Fatalf("stored %d bundles, want %d", len(want), 3*copies)
	}
	compareBuckets(t, "one establishment per worker", bucketValues(t, boundedKV), want)
	if got, want := revisionsBySlug(boundedChanges.take()), revisionsBySlug(allChanges.take()); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("announced revisions differ:\n bounded %v\n all in memory %v", got, want)
	}
	if len(stateKeys(t, boundedState)) == 0 {
		t.Errorf("no state written for the establishments let go of")
	}
	// Those let go of read their records back one by one, each through the one it follows, not
	// under their subject.
	if b, c := boundedLog.befores.Load(), boundedLog.chains.Load(); b != 0 || c == 0 {
		t.Errorf("following read records of one establishment %d times under its subject and %d times one by one, want only one by one", b, c)
	}

	// A stop after states were written but before the checkpoint moved past them: the next start
	// resumes from the older checkpoint, stores nothing new and announces nothing.
	if err := bounded.stop(t); err != nil && err != context.Canceled {
		t.Fatalf("stop: %v", err)
	}
	if err := writeCheckpoint(testContext(t), boundedState, checkpoint{Position: mid, Bucket: identityOf(t, boundedKV), Log: logIdentity(t, n)}); err != nil {
		t.Fatal(err)
	}
	log := &countingLog{Store: n.store}
	again := startProjectorWith(t, Config{Store: log, KV: boundedKV, State: boundedState, Notifier: &boundedChanges, Workers: 2, CacheSize: 2})
	again.waitFor(t, last)
	if r := log.replays.Load(); r != 0 {
		t.Errorf("the restart replayed the log %d times, want it to resume from its checkpoint", r)
	}
	compareBuckets(t, "after resuming", bucketValues(t, boundedKV), want)
	if c := boundedChanges.take(); len(c) != 0 {
		t.Errorf("resuming announced %d changes, want none: %v", len(c), c)
	}

	// Both go on alike.
	more := dayRecords(t, n, copies, 1, 4)
	all.waitFor(t, more)
	again.waitFor(t, more)
	want = bucketValues(t, allKV)
	compareBuckets(t, "following after resuming", bucketValues(t, boundedKV), want)
	if got, want := revisionsBySlug(boundedChanges.take()), revisionsBySlug(allChanges.take()); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("announced revisions differ after resuming:\n bounded %v\n all in memory %v", got, want)
	}

	// A replay of the whole log holding one establishment per worker stores the same bytes, and
	// reads nothing of the empty bucket it stores them into.
	replayKV := n.bucketNamed(t, "BOUNDED_REPLAY")
	intoEmpty := &countingBucket{KeyValue: replayKV.KeyValue}
	replay := startProjectorWith(t, Config{Store: n.store, KV: NewBundles(n.js, intoEmpty), State: n.freshState(t), Workers: 2, CacheSize: 2})
	replay.waitFor(t, more)
	compareBuckets(t, "replay with one establishment per worker", bucketValues(t, replayKV), want)
	if g := intoEmpty.gets.Load(); g != 0 {
		t.Errorf("the replay into an empty bucket read %d bundles, want none", g)
	}

	// Replayed again over the bucket it stored, with states let go of and read back in the middle
	// of its passes, it reads no establishment's records one by one, nor any bundle: the log and
	// the bucket once each, in their order, the later passes reading their records from the
	// files the first one wrote.
	if err := replay.stop(t); err != nil && err != context.Canceled {
		t.Fatalf("stop: %v", err)
	}
	log = &countingLog{Store: n.store}
	counted := &countingBucket{KeyValue: replayKV.KeyValue}
	replayState := n.freshState(t)
	again = startProjectorWith(t, Config{Store: log, KV: NewBundles(n.js, counted), State: replayState, Workers: 2, CacheSize: 2, ReplayAll: true})
	again.waitFor(t, more)
	compareBuckets(t, "replayed over its own bundles", bucketValues(t, replayKV), want)
	if b, g := log.befores.Load()+log.chains.Load(), counted.gets.Load(); b != 0 || g != 0 {
		t.Errorf("the replay read records of one establishment %d times and one bundle %d times, want neither", b, g)
	}
	if r, passes := log.replays.Load(), passesFor(3*copies, 2, 2); r != 1 || passes < 2 {
		t.Errorf("the replay read the log %d times in %d passes, want once in several", r, passes)
	}

	// Where the records of the later passes cannot be kept on disk, each pass reads the log: the
	// same bytes.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log = &countingLog{Store: n.store}
	eachPassKV := n.bucketNamed(t, "BOUNDED_LOG_EACH_PASS")
	eachPass := startProjectorWith(t, Config{Store: log, KV: eachPassKV, State: n.freshState(t), Workers: 2, CacheSize: 2, SpillDir: notDir})
	eachPass.waitFor(t, more)
	compareBuckets(t, "replay reading the log once per pass", bucketValues(t, eachPassKV), want)
	if r, passes := log.replays.Load(), passesFor(3*copies, 2, 2); int(r) != passes {
		t.Errorf("the replay without its files read the log %d times in %d passes, want once per pass", r, passes)
	}
	if len(stateKeys(t, replayState)) == 0 {
		t.Errorf("no state written for the establishments the replay let go of")
	}
}

// TestProjectorReplaysWhenItsCheckpointDoesNotHold restarts a projector over its state bucket
// and checks that it resumes only from a checkpoint of its own code, bucket and log.
func TestProjectorReplaysWhenItsCheckpointDoesNotHold(t *testing.T) {
	n := newNATSEnv(t)
	last := generatedLog(t, n, 2, 0, 6)
	state := n.freshState(t)
	first := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state})
	first.waitFor(t, last)
	if err := first.stop(t); err != nil && err != context.Canceled {
		t.Fatalf("stop: %v", err)
	}
	want := bucketValues(t, n.kv)

	restart := func(t *testing.T, kv *Bundles, replayAll ...bool) int32 {
		t.Helper()
		log := &countingLog{Store: n.store}
		p := startProjectorWith(t, Config{Store: log, KV: kv, State: state, ReplayAll: len(replayAll) > 0})
		p.waitFor(t, last)
		if err := p.stop(t); err != nil && err != context.Canceled {
			t.Fatalf("stop: %v", err)
		}
		return log.replays.Load()
	}
	put := func(t *testing.T, value string) {
		t.Helper()
		if _, err := state.Put(testContext(t), checkpointKey, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}

	// The steps depend on each other: they run in order.
	t.Run("its own checkpoint is resumed from", func(t *testing.T) {
		if r := restart(t, n.kv); r != 0 {
			t.Errorf("replayed %d times, want 0", r)
		}
		compareBuckets(t, "resumed", bucketValues(t, n.kv), want)
	})
	t.Run("nor when asked to replay", func(t *testing.T) {
		if r := restart(t, n.kv, true); r != 1 {
			t.Errorf("replayed %d times, want 1", r)
		}
		compareBuckets(t, "replayed", bucketValues(t, n.kv), want)
	})
	t.Run("a checkpoint of another code is not", func(t *testing.T) {
		put(t, fmt.Sprintf(`{"format":"projections/0","position":%d,"bucket":%q,"log":%q}`, last, identityOf(t, n.kv), logIdentity(t, n)))
		if r := restart(t, n.kv); r != 1 {
			t.Errorf("replayed %d times, want 1", r)
		}
		compareBuckets(t, "replayed", bucketValues(t, n.kv), want)
		if r := restart(t, n.kv); r != 0 {
			t.Errorf("after the replay: replayed %d times, want 0 (its checkpoint written)", r)
		}
	})
	t.Run("a checkpoint past the end of the log is not", func(t *testing.T) {
		put(t, fmt.Sprintf(`{"format":%q,"position":%d,"bucket":%q,"log":%q}`, checkpointFormat(), last+100, identityOf(t, n.kv), logIdentity(t, n)))
		if r := restart(t, n.kv); r != 1 {
			t.Errorf("replayed %d times, want 1", r)
		}
	})
	t.Run("a checkpoint of another log is not", func(t *testing.T) {
		put(t, fmt.Sprintf(`{"format":%q,"position":%d,"bucket":%q,"log":"CONTENT@2020-01-01T00:00:00Z"}`, checkpointFormat(), last, identityOf(t, n.kv)))
		if r := restart(t, n.kv); r != 1 {
			t.Errorf("replayed %d times, want 1", r)
		}
	})
	t.Run("a checkpoint of another bucket is not", func(t *testing.T) {
		fresh := n.bucketNamed(t, "FRESH")
		if r := restart(t, fresh); r != 1 {
			t.Errorf("replayed %d times, want 1", r)
		}
		got := bucketValues(t, fresh)
		if len(got) != len(want) {
			t.Fatalf("the new bucket holds %d bundles, want %d", len(got), len(want))
		}
	})
}

// At a resumption, an announcement lost in the stop is made, and a record that changed nothing
// announces nothing, however long ago the stored revision was announced.
func TestResumeAnnouncesWhatWasLostAndNothingElse(t *testing.T) {
	n := newNATSEnv(t)
	state := n.freshState(t)
	const cave = "cave-a-vins"
	start := func(log Log, a *announcer) *running {
		return startProjectorWith(t, Config{Store: log, KV: n.kv, State: state, Notifier: a, Announcements: a})
	}
	first := &announcer{}
	p := start(n.store, first)
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	p.waitFor(t, seq)
	announced := first.take()
	_ = p.stop(t)

	// The notifier is down: the next revision is stored, not announced, and the projector stops.
	down := &announcer{}
	down.recorder.changes = announced
	down.down.Store(true)
	p = start(n.store, down)
	url := "https://cdn.example.fr/carte-2.pdf"
	next := n.append(t, cave, domain.MasterMenuChanged{URL: &url})
	deadline := time.Now().Add(testTimeout)
	for b, _, _ := entry(t, n.kv, cave); b.Revision != int64(next); b, _, _ = entry(t, n.kv, cave) {
		if time.Now().After(deadline) {
			t.Fatalf("revision %d never stored", next)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = p.stop(t)

	up := &announcer{}
	up.recorder.changes = announced
	log := &countingLog{Store: n.store}
	p = start(log, up)
	p.waitFor(t, next)
	_ = p.stop(t)
	if r := log.replays.Load(); r != 0 {
		t.Errorf("replayed %d times, want a resumption", r)
	}
	want := []Change{announced[0], {Slug: cave, Revision: int64(next), Resources: announced[0].Resources, Unserved: true}}
	if diff := cmp.Diff(want, up.take()); diff != "" {
		t.Errorf("announcements after resuming (-want +got):\n%s", diff)
	}

	// A record that changes no document, while the notifier has forgotten every announcement.
	same := n.append(t, cave, domain.DayStarted{Date: fixture.Date(t, "2026-03-10")})
	forgot := &announcer{}
	p = start(n.store, forgot)
	p.waitFor(t, same)
	_ = p.stop(t)
	if got := forgot.take(); len(got) != 0 {
		t.Errorf("a record that changed nothing announced %+v", got)
	}
}

// A saved state ahead of the record in hand, as a replay stopped midway leaves, is not trusted:
// the records it holds are still projected and stored.
func TestStateAheadOfTheRecordIsNotTrusted(t *testing.T) {
	n := newNATSEnv(t)
	state := n.freshState(t)
	const demo = "chez-marcel"
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state})
	p.waitFor(t, n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22"))
	_ = p.stop(t)

	url := "https://cdn.example.fr/carte-2.pdf"
	n.append(t, demo, domain.MasterMenuChanged{URL: &url})
	last := n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")})
	recs, err := n.store.History(testContext(t), demo)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(slog.New(slog.DiscardHandler))
	for _, rec := range recs {
		m.apply(rec)
	}
	value, err := encodeState(m.byslug[demo], logIdentity(t, n), 12345)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.Put(testContext(t), stateKey(demo), value); err != nil {
		t.Fatal(err)
	}

	p = startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state})
	p.waitFor(t, last)
	replayKV := n.bucketNamed(t, "AHEAD_REPLAY")
	startProjectorWith(t, Config{Store: n.store, KV: replayKV, State: n.freshState(t)}).waitFor(t, last)
	compareBuckets(t, "resumed past a state ahead", bucketValues(t, n.kv), bucketValues(t, replayKV))
}

// A saved state is read back as it was, and only for the log it was saved from: an establishment
// of a log restored from a backup is rebuilt from that log.
func TestStateIsReadOnlyForItsLog(t *testing.T) {
	t.Parallel()
	e := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	b := projections.Render(e, 7)
	saved := &tracked{agg: e, seq: 42, stored: projections.Summarize(&b), changed: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)}
	value, err := encodeState(saved, "CONTENT@1", 99)
	if err != nil {
		t.Fatal(err)
	}
	got, replay, ok := decodeState(e.Slug, "CONTENT@1", value)
	if !ok || replay != 99 || got.seq != 42 || !got.stored.Same(saved.stored) || !got.changed.Equal(saved.changed) {
		t.Fatalf("read back: ok %v, replay %d, seq %d, same summary %v", ok, replay, got.seq, ok && got.stored.Same(saved.stored))
	}
	rendered := projections.Render(got.agg, 7)
	have, err := dockey.EncodeBundle(&rendered)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := dockey.EncodeBundle(&b); !bytes.Equal(have, want) {
		t.Errorf("the aggregate read back renders other documents")
	}
	if _, _, ok := decodeState(e.Slug, "CONTENT@2", value); ok {
		t.Errorf("a state of another log was read")
	}
}

// A change older than ReannounceWithin on the projector's clock is not checked at a start: its
// announcement, lost, is not made again, while a start on a clock within the window makes it.
func TestOldChangesAreNotAnnouncedAgain(t *testing.T) {
	const cave = "cave-a-vins"
	// afterLoss stores cave's import with the notifier down, then starts again on the clock now
	// and returns what that start announced and the revision stored.
	afterLoss := func(now func() time.Time, retention time.Duration) ([]Change, int64) {
		n := newNATSEnv(t)
		state := n.freshState(t)
		down := &announcer{}
		down.down.Store(true)
		p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Notifier: down, Announcements: down})
		n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
		deadline := time.Now().Add(testTimeout)
		for down.calls.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no announcement tried")
			}
			time.Sleep(5 * time.Millisecond)
		}
		_ = p.stop(t)
		stored, _, _ := entry(t, n.kv, cave)
		a := &announcer{}
		p = startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Notifier: a, Announcements: a, Now: now, SignalRetention: retention})
		p.waitFor(t, stored.Sequence)
		_ = p.stop(t)
		return a.take(), stored.Revision
	}
	if got, _ := afterLoss(func() time.Time { return fixture.EventTime.Add(ReannounceWithin + time.Hour) }, 0); len(got) != 0 {
		t.Errorf("a change older than ReannounceWithin was announced again: %+v", got)
	}
	if got, rev := afterLoss(testNow, 0); len(got) != 1 || got[0].Revision != rev {
		t.Errorf("within ReannounceWithin: announcements %+v, want the lost one of revision %d", got, rev)
	}
	// Signals kept two days: a change of a day and an hour ago may have lost its signal already.
	if got, _ := afterLoss(func() time.Time { return fixture.EventTime.Add(25 * time.Hour) }, 48*time.Hour); len(got) != 0 {
		t.Errorf("a change older than a shorter retention's window was announced again: %+v", got)
	}
}

// A draft is never announced: not when stored, not by a start that checks announcements, whether
// it resumes or replays, not when a replay finds it stored with documents, as a renderer that
// rendered drafts stored it.
func TestDraftsAreNeverAnnounced(t *testing.T) {
	n := newNATSEnv(t)
	state := n.freshState(t)
	const draft = "cave-a-vins"
	// The records are recent on the projectors' clock (testNow): a start checks the announcements
	// of changes younger than ReannounceWithin.
	snap := fixture.ReadSnapshot(t, "../testdata/draft/snapshot.json")
	n.append(t, draft, fixture.ImportEvents(t, domain.New(draft), snap)...)
	seq := n.append(t, draft, domain.DayStarted{Date: fixture.Date(t, "2026-03-10")})
	for _, replay := range []bool{false, false, true} {
		a := &announcer{}
		p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Notifier: a, Announcements: a, ReplayAll: replay})
		p.waitFor(t, seq)
		_ = p.stop(t)
		if got := a.take(); len(got) != 0 {
			t.Errorf("replay %t: a draft was announced: %+v", replay, got)
		}
	}

	withDocs := renderedDraft(fixture.Load(t, "../testdata/draft/snapshot.json", fixture.Date(t, "2026-03-10")), int64(seq))
	withDocs.Sequence = seq
	projections.Compress(&withDocs)
	value, err := dockey.EncodeBundle(&withDocs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.kv.Put(testContext(t), dockey.Key(draft), value); err != nil {
		t.Fatal(err)
	}
	a := &announcer{}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Notifier: a, Announcements: a, ReplayAll: true})
	p.waitFor(t, seq)
	_ = p.stop(t)
	if got := a.take(); len(got) != 0 {
		t.Errorf("a draft stored with documents was announced when they were removed: %+v", got)
	}
	if b, _, _ := entry(t, n.kv, draft); (len(b.Establishment.Body) != 0 && string(b.Establishment.Body) != "null") || b.Revision <= int64(seq) {
		t.Errorf("the draft stored with documents is stored at revision %d with body %q, want a later revision without documents", b.Revision, b.Establishment.Body)
	}
}
