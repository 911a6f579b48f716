package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// testTimeout bounds every wait of a test on NATS.
const testTimeout = 20 * time.Second

// recorder is a Notifier that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	changes []Change
	stored  map[string]uint64 // the Stored of each establishment's last change
}

func (r *recorder) Changed(_ context.Context, c Change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stored == nil {
		r.stored = map[string]uint64{}
	}
	r.stored[c.Slug] = c.Stored
	c.Stored = 0 // checked apart, by lastStored
	r.changes = append(r.changes, c)
	return nil
}

// lastStored returns the Stored of the last change of slug.
func (r *recorder) lastStored(slug string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stored[slug]
}

// take returns the changes received since the last call, without their Stored.
func (r *recorder) take() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.changes
	r.changes = nil
	return out
}

// natsEnv is a real JetStream server with the event log and the bundle bucket.
type natsEnv struct {
	store    *events.Store
	js       jetstream.JetStream
	kv       *Bundles
	commands int // commands appended so far, for unique command ids
	states   int // state buckets created so far, for unique names
}

func newNATSEnv(t *testing.T) *natsEnv {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t))
	ctx := testContext(t)
	store, err := events.Open(ctx, nc, events.Config{})
	if err != nil {
		t.Fatalf("open event log: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := OpenBucket(ctx, js, 1)
	if err != nil {
		t.Fatalf("open bucket: %v", err)
	}
	return &natsEnv{store: store, js: js, kv: kv}
}

// freshState returns a new, empty state bucket: a projector started with it replays the whole log.
func (n *natsEnv) freshState(t *testing.T) jetstream.KeyValue {
	t.Helper()
	n.states++
	kv, err := n.js.CreateKeyValue(testContext(t), jetstream.KeyValueConfig{Bucket: fmt.Sprintf("STATE_%d", n.states), History: 1})
	if err != nil {
		t.Fatalf("create state bucket: %v", err)
	}
	return kv
}

func testContext(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// append stores one record of evs for slug and returns its sequence.
func (n *natsEnv) append(t *testing.T, slug string, evs ...domain.Event) uint64 {
	t.Helper()
	return n.appendEnvelopes(t, slug, fixture.Envelopes(t, evs...))
}

func (n *natsEnv) appendEnvelopes(t *testing.T, slug string, envs []events.Envelope) uint64 {
	t.Helper()
	ctx := testContext(t)
	last, err := n.store.LastSequence(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	n.commands++
	seq, err := n.store.Append(ctx, slug, last, fmt.Sprintf("cmd-%d", n.commands), envs)
	if err != nil {
		t.Fatalf("append to %s: %v", slug, err)
	}
	return seq
}

// importFixture appends the import of the snapshot at path, then the day today, and returns the
// sequence of the last record.
func (n *natsEnv) importFixture(t *testing.T, path, today string) uint64 {
	t.Helper()
	s := fixture.ReadSnapshot(t, path)
	n.append(t, s.Slug, fixture.ImportEvents(t, domain.New(domain.Slug(s.Slug)), s)...)
	return n.append(t, s.Slug, domain.DayStarted{Date: fixture.Date(t, today)})
}

// running is a projector started in the background.
type running struct {
	*Projector
	cancel context.CancelFunc
	done   chan error
}

// startProjectorWith starts a projector of cfg, logging to the test's output.
func startProjectorWith(t *testing.T, cfg Config) *running {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	if cfg.Now == nil {
		cfg.Now = testNow
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Projector: p, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() { _ = r.stop(t) })
	return r
}

// stop cancels Run and returns its error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(testTimeout):
		t.Fatalf("projector did not stop")
		return nil
	}
}

func (r *running) waitFor(t *testing.T, seq uint64) {
	t.Helper()
	if err := r.WaitFor(testContext(t), seq); err != nil {
		t.Fatalf("wait for %d: %v", seq, err)
	}
}

// entry returns the stored value of slug's bundle, decoded, and its KV revision.
func entry(t *testing.T, kv jetstream.KeyValue, slug string) (dockey.Bundle, []byte, uint64) {
	t.Helper()
	e, err := kv.Get(testContext(t), dockey.Key(slug))
	if err != nil {
		t.Fatalf("get %s: %v", slug, err)
	}
	var b dockey.Bundle
	if err := dockey.Decode(e.Value(), &b); err != nil {
		t.Fatalf("decode %s: %v", slug, err)
	}
	return b, e.Value(), e.Revision()
}

func allDemoResources() []string {
	return []string{"establishment", "hours", "menus", "menus/la-carte", "menus/menu-du-jour", "menus/vins", "jsonld"}
}

func TestProjectorEndToEnd(t *testing.T) {
	n := newNATSEnv(t)
	const demo, cave = "chez-marcel", "cave-a-vins"
	n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")                  // seq 1, 2
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10") // seq 3, 4

	rec := &recorder{}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: rec})
	p.waitFor(t, seq)

	// The replay stores what rendering the fixtures gives, at the sequence of the last visible
	// change: the day started at 2 makes the daily menu current; the day of the other
	// establishment changes nothing it shows.
	for _, tc := range []struct {
		slug, snapshot, today string
		revision              int64
	}{
		{demo, "../../cmd/publisher/demo.json", "2026-11-22", 2},
		{cave, "../testdata/uploaded-only/snapshot.json", "2026-03-10", 3},
	} {
		want := projections.Render(fixture.Load(t, tc.snapshot, fixture.Date(t, tc.today)), tc.revision)
		want.Sequence = uint64(tc.revision) // the record of the change
		projections.Compress(&want)
		wantValue, err := dockey.EncodeBundle(&want)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, _ := entry(t, n.kv, tc.slug); !bytes.Equal(got, wantValue) {
			t.Errorf("%s: stored bundle differs from the rendering at revision %d:\ngot  %.300s\nwant %.300s", tc.slug, tc.revision, got, wantValue)
		}
	}
	want := []Change{
		{Slug: cave, Revision: 3, Resources: []string{"establishment", "hours", "menus", "menus/carte-des-vins", "menus/cocktails", "menus/planches", "jsonld"}, Unserved: true},
		{Slug: demo, Revision: 2, Resources: allDemoResources()},
	}
	// Establishments are reconciled at once, on several workers: in no order between them.
	replayed := rec.take()
	slices.SortFunc(replayed, func(a, b Change) int { return strings.Compare(a.Slug, b.Slug) })
	if diff := cmp.Diff(want, replayed); diff != "" {
		t.Errorf("changes after the replay (-want +got):\n%s", diff)
	}

	// A visible change raises the revision to its sequence and names the resource.
	s := fixture.ReadSnapshot(t, "../../cmd/publisher/demo.json")
	id := domain.Identity{Name: "Chez Marcel et Fils", BusinessType: "restaurant", Description: s.Description}
	seq = n.append(t, demo, domain.IdentityChanged{Identity: id})
	p.waitFor(t, seq)
	b, _, kvRev := entry(t, n.kv, demo)
	if b.Revision != int64(seq) {
		t.Errorf("revision after an identity change: got %d, want %d", b.Revision, seq)
	}
	if diff := cmp.Diff([]Change{{Slug: demo, Revision: int64(seq), Resources: []string{"establishment", "jsonld"}}}, rec.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got := rec.lastStored(demo); got != kvRev {
		t.Errorf("the change says it was stored at %d, the bucket holds it at %d", got, kvRev)
	}
	visibleRevision := b.Revision

	// An invisible change writes nothing.
	seq = n.append(t, demo, domain.WebhookRegistered{Endpoint: domain.WebhookEndpoint{ID: "w1", URL: "https://hooks.example.fr/a"}})
	p.waitFor(t, seq)
	if _, _, got := entry(t, n.kv, demo); got != kvRev {
		t.Errorf("an invisible change rewrote the bundle: kv revision %d, want %d", got, kvRev)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("an invisible change notified %v", got)
	}

	// An access change rewrites the bundle at the same content revision, without a signal.
	newKey := domain.NewAPIKey([32]byte{42})
	seq = n.append(t, demo, domain.APIKeyRegenerated{KeyHash: newKey.Hash()})
	p.waitFor(t, seq)
	b, _, got := entry(t, n.kv, demo)
	if got == kvRev || b.KeyHash != newKey.Hash() || b.Revision != visibleRevision {
		t.Errorf("access change: kv revision %d (was %d), key %s, content revision %d; want a rewrite with the new key at %d",
			got, kvRev, b.KeyHash, b.Revision, visibleRevision)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("an access change notified %v", got)
	}

	// Undecodable events are skipped; the rest of the record applies.
	good := fixture.Envelopes(t, domain.MasterMenuChanged{URL: nil})[0]
	seq = n.appendEnvelopes(t, demo, []events.Envelope{
		{Type: "establishment.renamed_in_a_future_version", Time: fixture.EventTime, SchemaVersion: 1, Payload: json.RawMessage(`{"name":"x"}`)},
		{Type: domain.TypeHoursChanged, Time: fixture.EventTime, SchemaVersion: 1, Payload: json.RawMessage(`{"hours":"not an object"}`)},
		{Type: domain.TypeIdentityChanged, Time: fixture.EventTime, SchemaVersion: 7, Payload: json.RawMessage(`{"identity":{"name":"v7"}}`)},
		good,
	})
	p.waitFor(t, seq)
	b, _, _ = entry(t, n.kv, demo)
	if b.Revision != int64(seq) || b.MasterMenuURL != "" {
		t.Errorf("after a record with undecodable events: revision %d master %q, want %d and none", b.Revision, b.MasterMenuURL, seq)
	}
	if diff := cmp.Diff([]Change{{Slug: demo, Revision: int64(seq), Resources: []string{"menus"}}}, rec.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// A message that is not a record at all is passed over.
	ack, err := n.js.Publish(testContext(t), "events."+demo, []byte("not a record"))
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, ack.Sequence)
	seq = n.append(t, demo, domain.MasterMenuChanged{URL: ptr("https://cdn.example.fr/carte.pdf")})
	if seq != ack.Sequence+1 {
		t.Fatalf("record after the bad message: sequence %d, want %d", seq, ack.Sequence+1)
	}
	p.waitFor(t, seq)
	if b, _, _ := entry(t, n.kv, demo); b.Revision != int64(seq) || b.MasterMenuURL != "https://cdn.example.fr/carte.pdf" {
		t.Errorf("after a bad message: revision %d master %q, want %d and the new file", b.Revision, b.MasterMenuURL, seq)
	}
	if diff := cmp.Diff([]Change{{Slug: demo, Revision: int64(seq), Resources: []string{"menus"}}}, rec.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got := p.Position(); got != seq {
		t.Errorf("position: got %d, want %d", got, seq)
	}
	if err := p.stop(t); !errors.Is(err, context.Canceled) {
		t.Errorf("run after cancel: got %v, want context.Canceled", err)
	}

	// A restart on the same bucket rewrites nothing and keeps every revision.
	_, demoValue, demoRev := entry(t, n.kv, demo)
	_, caveValue, caveRev := entry(t, n.kv, cave)
	rec2 := &recorder{}
	p2 := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: rec2})
	p2.waitFor(t, seq)
	if _, v, r := entry(t, n.kv, demo); r != demoRev || !bytes.Equal(v, demoValue) {
		t.Errorf("restart rewrote %s: kv revision %d, want %d", demo, r, demoRev)
	}
	if _, v, r := entry(t, n.kv, cave); r != caveRev || !bytes.Equal(v, caveValue) {
		t.Errorf("restart rewrote %s: kv revision %d, want %d", cave, r, caveRev)
	}
	if got := rec2.take(); len(got) != 0 {
		t.Errorf("restart notified %v", got)
	}

	// It goes on with live records.
	seq = n.append(t, demo, domain.DayStarted{Date: fixture.Date(t, "2026-11-23")})
	p2.waitFor(t, seq)
	if diff := cmp.Diff([]Change{{Slug: demo, Revision: int64(seq), Resources: []string{"menus", "menus/menu-du-jour", "jsonld"}}}, rec2.take()); diff != "" {
		t.Errorf("changes after restart (-want +got):\n%s", diff)
	}
	if err := p2.stop(t); !errors.Is(err, context.Canceled) {
		t.Errorf("run after cancel: got %v, want context.Canceled", err)
	}

	// A rebuild into an empty bucket gives the same bytes.
	fresh, err := n.js.CreateKeyValue(testContext(t), jetstream.KeyValueConfig{Bucket: "REBUILD", History: 1, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	p3 := startProjectorWith(t, Config{Store: n.store, KV: NewBundles(n.js, fresh), State: n.freshState(t)})
	p3.waitFor(t, seq)
	for _, slug := range []string{demo, cave} {
		_, live, _ := entry(t, n.kv, slug)
		_, rebuilt, _ := entry(t, fresh, slug)
		if !bytes.Equal(live, rebuilt) {
			t.Errorf("%s: rebuilt bundle differs:\nlive    %.300s\nrebuilt %.300s", slug, live, rebuilt)
		}
	}
}

func TestProjectorNeverGoesBelowStoredRevisions(t *testing.T) {
	n := newNATSEnv(t)
	const demo, cave = "chez-marcel", "cave-a-vins"
	n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")

	// The bucket holds bundles from an earlier projector, ahead of this log: one rendered another
	// way, one with the same content.
	ctx := testContext(t)
	other := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	other.Identity.Name = "Rendu autrement"
	put := func(b dockey.Bundle) uint64 {
		projections.Compress(&b)
		v, err := dockey.EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := n.kv.Put(ctx, dockey.Key(b.Slug), v)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	put(projections.Render(other, 1000))
	caveKV := put(projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), 500))

	rec := &recorder{}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: rec})
	p.waitFor(t, seq)
	if b, _, _ := entry(t, n.kv, demo); b.Revision != 1001 {
		t.Errorf("%s: revision %d, want 1001", demo, b.Revision)
	}
	if b, _, r := entry(t, n.kv, cave); b.Revision != 500 || r != caveKV {
		t.Errorf("%s: revision %d kv revision %d, want 500 unchanged at %d", cave, b.Revision, r, caveKV)
	}
	if diff := cmp.Diff([]Change{{Slug: demo, Revision: 1001, Resources: []string{"establishment", "jsonld"}}}, rec.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	seq = n.append(t, cave, domain.MasterMenuChanged{URL: ptr("https://cdn.cave.example.fr/tout.pdf")})
	p.waitFor(t, seq)
	if b, _, _ := entry(t, n.kv, cave); b.Revision != 501 {
		t.Errorf("%s after a change: revision %d, want 501", cave, b.Revision)
	}
}

func TestProjectorLifecycle(t *testing.T) {
	n := newNATSEnv(t)
	if _, err := New(Config{}); err == nil {
		t.Errorf("new without store and bucket: got no error")
	}
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.WaitFor(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a cancelled context: got %v, want context.Canceled", err)
	}
	seq := n.importFixture(t, "../testdata/dated/snapshot.json", "2026-11-18")
	p.waitFor(t, seq)
	if err := p.Run(context.Background()); err == nil {
		t.Errorf("second run: got no error")
	}
	if b, _, _ := entry(t, n.kv, "bistrot-du-marche"); b.Revision != int64(seq) {
		t.Errorf("live creation: revision %d, want %d", b.Revision, seq)
	}
	_ = p.stop(t)
	if err := p.WaitFor(testContext(t), seq+1); !errors.Is(err, ErrStopped) {
		t.Errorf("wait after stop: got %v, want ErrStopped", err)
	}
	if err := p.WaitFor(testContext(t), seq); err != nil {
		t.Errorf("wait for a projected sequence after stop: %v", err)
	}
}

// flakyBucket fails its first failures writes, then writes to the bucket it wraps.
type flakyBucket struct {
	jetstream.KeyValue
	mu       sync.Mutex
	failures int
	puts     int
}

func (f *flakyBucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	f.mu.Lock()
	f.puts++
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	if fail {
		return 0, errors.New("nats: timeout")
	}
	return f.KeyValue.Put(ctx, key, value)
}

func TestProjectorRetriesFailedWrites(t *testing.T) {
	n := newNATSEnv(t)
	kv := &flakyBucket{KeyValue: n.kv.KeyValue, failures: 2}
	rec := &recorder{}
	p := startProjectorWith(t, Config{Store: n.store, KV: unprinted(n.js, kv), State: n.freshState(t), Notifier: rec})
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	p.waitFor(t, seq)
	if b, _, _ := entry(t, n.kv, "cave-a-vins"); b.Revision != int64(seq-1) {
		t.Errorf("revision %d, want %d", b.Revision, seq-1)
	}
	kv.mu.Lock()
	puts := kv.puts
	kv.mu.Unlock()
	if puts != 3 {
		t.Errorf("puts: got %d, want 3 (two failures, one success)", puts)
	}
	if got := rec.take(); len(got) != 1 {
		t.Errorf("notified %d times, want once after the successful write", len(got))
	}
}

func TestProjectorKeepsPreviousBundleWhenTooLarge(t *testing.T) {
	n := newNATSEnv(t)
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	ref := projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), int64(seq))
	projections.Compress(&ref) // stored bundles carry the gzip coding of every document
	value, err := dockey.EncodeBundle(&ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Store: n.store, KV: n.kv, State: n.freshState(t), MaxValueSize: len(value) + 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := p.WaitFor(testContext(t), seq); err != nil {
		t.Fatal(err)
	}
	before, _, kvRev := entry(t, n.kv, "cave-a-vins")

	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	seq = n.append(t, "cave-a-vins", domain.IdentityChanged{Identity: domain.Identity{Name: "Cave", BusinessType: "wine_shop", Description: ptr(string(long))}})
	if err := p.WaitFor(testContext(t), seq); err != nil {
		t.Fatal(err)
	}
	if after, _, r := entry(t, n.kv, "cave-a-vins"); r != kvRev || after.Revision != before.Revision {
		t.Errorf("an oversized bundle was stored: kv revision %d (was %d), revision %d", r, kvRev, after.Revision)
	}

	// A later change that fits is stored, compared with what is stored.
	seq = n.append(t, "cave-a-vins", domain.IdentityChanged{Identity: domain.Identity{Name: "Cave", BusinessType: "wine_shop"}})
	if err := p.WaitFor(testContext(t), seq); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := entry(t, n.kv, "cave-a-vins"); after.Revision != int64(seq) {
		t.Errorf("revision after a change that fits: %d, want %d", after.Revision, seq)
	}
	if _, err := New(Config{Store: n.store, KV: n.kv, State: n.freshState(t), MaxValueSize: MaxBundleSize + 1}); err == nil {
		t.Errorf("max value size above the bucket's: got no error")
	}
}

// TestStoredBundlesCarryTheirPrint checks that the projector stores each bundle with the
// fingerprint of its summary in a header, and that the fingerprints are read from the headers:
// a deleted bundle as none, and the read refused when a bundle has none.
func TestStoredBundlesCarryTheirPrint(t *testing.T) {
	n := newNATSEnv(t)
	const demo, cave = "chez-marcel", "cave-a-vins"
	n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	p.waitFor(t, seq)

	ctx := testContext(t)
	pb := n.kv
	if !pb.printing {
		t.Fatalf("OpenBucket gives a bucket that does not store fingerprints")
	}
	stream, err := n.js.Stream(ctx, "KV_"+n.kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	slugs := []string{cave, demo} // sorted, as a replay lists them
	want, wantSeqs := make([]uint64, len(slugs)), make([]uint64, len(slugs))
	for i, slug := range slugs {
		msg, err := stream.GetLastMsgForSubject(ctx, "$KV."+n.kv.Bucket()+"."+dockey.Key(slug))
		if err != nil {
			t.Fatal(err)
		}
		s, err := projections.SummarizeStored(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		want[i], wantSeqs[i] = s.Fingerprint(), msg.Sequence
		if got := msg.Header.Get(printHeader); got != strconv.FormatUint(want[i], 16) {
			t.Errorf("%s: header %s %q, want the fingerprint of its summary, %x", slug, printHeader, got, want[i])
		}
	}
	var seqs []uint64 // of the last read
	read := func() ([]uint64, bool, int) {
		t.Helper()
		var absent reconciled
		got, gotSeqs, err := headerPrints(ctx, pb, slugs, &absent)
		if err != nil && !errors.Is(err, errNoPrints) {
			t.Fatal(err)
		}
		seqs = gotSeqs
		return got, err == nil, absent.absent
	}
	if got, complete, absent := read(); !slices.Equal(got, want) || !complete || absent != 0 {
		t.Errorf("fingerprints read: %x, complete %v, %d absent; want %x, complete, none absent", got, complete, absent, want)
	}
	if !slices.Equal(seqs, wantSeqs) {
		t.Errorf("sequences of the writes read: %d, want %d", seqs, wantSeqs)
	}

	// A bundle deleted is left out; one of an establishment absent from the list is counted.
	other := projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), 7)
	other.Slug = "ferme"
	value, err := dockey.EncodeBundle(&other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.putPrinted(ctx, dockey.Key(other.Slug), value, 42); err != nil {
		t.Fatal(err)
	}
	if got, complete, absent := read(); !slices.Equal(got, want) || !complete || absent != 1 {
		t.Errorf("with a bundle absent from the list: %x, complete %v, %d absent; want %x, complete, 1 absent", got, complete, absent, want)
	}
	if err := n.kv.Delete(ctx, dockey.Key(other.Slug)); err != nil {
		t.Fatal(err)
	}
	if got, complete, absent := read(); !slices.Equal(got, want) || !complete || absent != 0 {
		t.Errorf("after a delete: %x, complete %v, %d absent; want %x, complete, none absent", got, complete, absent, want)
	}
	_, caveValue, _ := entry(t, n.kv, cave)
	if err := n.kv.Delete(ctx, dockey.Key(cave)); err != nil {
		t.Fatal(err)
	}
	if got, complete, _ := read(); !slices.Equal(got, []uint64{0, want[1]}) || !complete {
		t.Errorf("after a listed bundle's delete: %x, complete %v; want %x, complete", got, complete, []uint64{0, want[1]})
	}
	if _, err := pb.putPrinted(ctx, dockey.Key(cave), caveValue, want[0]); err != nil {
		t.Fatal(err)
	}

	// A bundle stored without a fingerprint, as an earlier version stored them.
	_, stored, _ := entry(t, n.kv, demo)
	if _, err := n.kv.Put(ctx, dockey.Key(demo), stored); err != nil {
		t.Fatal(err)
	}
	if _, complete, _ := read(); complete {
		t.Error("a bundle without a fingerprint: the read is complete")
	}
}

// Bundles of establishments the log does not know are left in the bucket and reported in one
// line, with their count and a few of their slugs, however many there are, whether the replay
// reads the bucket's fingerprints or, where a bundle has none, the whole bucket.
func TestBundlesAbsentFromTheLogAreReportedInOneLine(t *testing.T) {
	for _, printed := range []bool{true, false} {
		t.Run(fmt.Sprintf("printed=%v", printed), func(t *testing.T) {
			testBundlesAbsentFromTheLog(t, printed)
		})
	}
}

// testBundlesAbsentFromTheLog runs TestBundlesAbsentFromTheLogAreReportedInOneLine with the
// bundles stored with their fingerprints or, as an earlier version stored them, without.
func testBundlesAbsentFromTheLog(t *testing.T, printed bool) {
	n := newNATSEnv(t)
	seq := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
	if !printed {
		// The establishment of the log has its bundle, without a fingerprint: the whole bucket is read.
		first := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
		first.waitFor(t, seq)
		if err := first.stop(t); err != nil && err != context.Canceled {
			t.Fatal(err)
		}
		_, value, _ := entry(t, n.kv, "chez-marcel")
		if _, err := n.kv.Put(testContext(t), dockey.Key("chez-marcel"), value); err != nil {
			t.Fatal(err)
		}
		if _, _, err := headerPrints(testContext(t), n.kv, []string{"chez-marcel"}, &reconciled{}); !errors.Is(err, errNoPrints) {
			t.Fatalf("a bundle without a fingerprint: the headers read gives %v, want errNoPrints", err)
		}
	}
	strangers := projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), 7)
	for i := range 12 {
		b := strangers
		b.Slug = fmt.Sprintf("inconnu-%02d", i)
		v, err := dockey.EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		if printed {
			_, err = n.kv.putPrinted(testContext(t), dockey.Key(b.Slug), v, projections.StoredPrint(&b))
		} else {
			_, err = n.kv.Put(testContext(t), dockey.Key(b.Slug), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	p, err := New(Config{Store: n.store, KV: n.kv, State: n.freshState(t), Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	if err := p.WaitFor(testContext(t), seq); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "absent from the log") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "count=12") ||
		!strings.Contains(lines[0], "inconnu-00 inconnu-01 inconnu-02 inconnu-03 inconnu-04]") {
		t.Errorf("warnings about bundles absent from the log: got %q, want one line with the count and the first five", lines)
	}
	if b, _, _ := entry(t, n.kv, "inconnu-11"); b.Revision != 7 {
		t.Errorf("a bundle absent from the log: revision %d, want 7, left as it was", b.Revision)
	}
}

// syncWriter serialises the writes of the projector's workers to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// A rendered document that is not JSON is not stored: readers take a body whose tag is its own
// without parsing it, so the projector is where a body is checked.
func TestDocumentsThatAreNotJSONAreNotStored(t *testing.T) {
	n := newNATSEnv(t)
	p, err := New(Config{Store: n.store, KV: n.kv, State: n.freshState(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), 3)
	bad := b
	bad.Hours.Body = []byte(`{"business_hours":[`)
	bad.Hours.ETag = projections.ETag(bad.Hours.Body)
	if stored, err := p.store(testContext(t), projections.Update{Bundle: bad, Write: true}); stored || err != nil {
		t.Fatalf("store of a bundle whose hours are not JSON: stored %t, error %v; want neither", stored, err)
	}
	if _, err := n.kv.Get(testContext(t), dockey.Key(bad.Slug)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after it: get %v, want ErrKeyNotFound", err)
	}
	if name, ok := allJSON(&bad); ok || name != projections.ResourceHours {
		t.Errorf("allJSON: %q, %t; want %q, false", name, ok, projections.ResourceHours)
	}
	if stored, err := p.store(testContext(t), projections.Update{Bundle: b, Write: true}); !stored || err != nil {
		t.Fatalf("store of the rendered bundle: stored %t, error %v", stored, err)
	}
}
