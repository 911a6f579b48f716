package readapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections/dockey"
)

// waitTimeout bounds every wait on the mirror; a healthy one answers in microseconds.
const waitTimeout = 10 * time.Second

// newBucket starts a NATS server and returns a fresh bundle bucket and the connection it uses.
func newBucket(tb testing.TB) (jetstream.KeyValue, *nats.Conn) {
	tb.Helper()
	nc := natstest.Connect(tb, natstest.Start(tb))
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("jetstream: %v", err)
	}
	kv, err := js.CreateKeyValue(tb.Context(), jetstream.KeyValueConfig{Bucket: dockey.Bucket, History: 1})
	if err != nil {
		tb.Fatalf("create bucket: %v", err)
	}
	return kv, nc
}

// newGeneration creates generation n of the bucket on nc's server, as a rebuild names it.
func newGeneration(tb testing.TB, nc *nats.Conn, n int) jetstream.KeyValue {
	tb.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("jetstream: %v", err)
	}
	kv, err := js.CreateKeyValue(tb.Context(), jetstream.KeyValueConfig{Bucket: fmt.Sprintf("%s_%d", dockey.Bucket, n), History: 1})
	if err != nil {
		tb.Fatalf("create bucket: %v", err)
	}
	return kv
}

// putBundle stores b as the projector does.
func putBundle(tb testing.TB, kv jetstream.KeyValue, b dockey.Bundle) uint64 {
	tb.Helper()
	raw, err := dockey.EncodeBundle(&b)
	if err != nil {
		tb.Fatalf("encode bundle: %v", err)
	}
	return putRaw(tb, kv, dockey.Key(b.Slug), raw)
}

// putJSONBundle stores b in the JSON form of earlier versions.
func putJSONBundle(tb testing.TB, kv jetstream.KeyValue, b dockey.Bundle) uint64 {
	tb.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		tb.Fatalf("marshal bundle: %v", err)
	}
	return putRaw(tb, kv, dockey.Key(b.Slug), raw)
}

func putRaw(tb testing.TB, kv jetstream.KeyValue, key string, value []byte) uint64 {
	tb.Helper()
	rev, err := kv.Put(tb.Context(), key, value)
	if err != nil {
		tb.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// startMirror runs a mirror of kv, given to each of setup first, until the test ends, then checks
// that Run returned nil.
func startMirror(tb testing.TB, kv jetstream.KeyValue, setup ...func(*Mirror)) (*Mirror, *logBuffer) {
	tb.Helper()
	logger, logs := newTestLogger()
	m, err := NewMirror(kv, logger)
	if err != nil {
		tb.Fatalf("NewMirror: %v", err)
	}
	for _, s := range setup {
		s(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: got %v, want nil after cancel", err)
		}
	})
	return m, logs
}

func waitCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), waitTimeout)
	tb.Cleanup(cancel)
	return ctx
}

func waitReady(tb testing.TB, m *Mirror) {
	tb.Helper()
	select {
	case <-m.Ready():
	case <-waitCtx(tb).Done():
		tb.Fatalf("mirror not ready within %v", waitTimeout)
	}
}

func waitBucket(tb testing.TB, m *Mirror, rev uint64) {
	tb.Helper()
	if err := m.WaitBucketRevision(waitCtx(tb), rev); err != nil {
		tb.Fatal(err)
	}
}

func waitRevision(tb testing.TB, m *Mirror, slug string, rev int64) {
	tb.Helper()
	if err := m.WaitRevision(waitCtx(tb), slug, rev); err != nil {
		tb.Fatal(err)
	}
}

// newMirrorServer returns the handler of a server of m without quotas: the mirror tests read in
// loops.
func newMirrorServer(tb testing.TB, m *Mirror) http.Handler {
	tb.Helper()
	s, err := New(Config{Mirror: m, Logger: discardLogger(), KeyQuota: -1, IPQuota: -1, RedirectQuota: -1})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s.Handler()
}

// getEstablishment fetches the establishment document of slug with key through h.
func getEstablishment(tb testing.TB, h http.Handler, slug, key string) (status int, body string) {
	tb.Helper()
	w := serve(tb, h, http.MethodGet, "/api/v1/establishments/"+slug, withKey(key))
	return w.Code, w.Body.String()
}

func TestMirrorInitialValues(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 7))
	putJSONBundle(t, kv, testBundle(bob, 3)) // stored by an earlier version
	putRaw(t, kv, dockey.Key("broken"), []byte("not json"))
	putRaw(t, kv, dockey.Key("Bad_Key"), []byte("{}"))
	putRaw(t, kv, "other.key", []byte("not watched"))
	last := putBundle(t, kv, testBundle(dan, 2))

	logger, logs := newTestLogger()
	m, err := NewMirror(kv, logger)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Ready():
		t.Fatal("Ready: closed before Run, want open")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitReady(t, m)

	// Every initial value is visible the moment Ready is closed: no further wait.
	got := map[string]int64{}
	for _, slug := range []string{alice, bob, dan, "broken"} {
		if e := m.lookup(slug); e != nil {
			got[slug] = e.revision
		}
	}
	if diff := cmp.Diff(map[string]int64{alice: 7, bob: 3, dan: 2}, got); diff != "" {
		t.Errorf("revisions after ready (-want +got):\n%s", diff)
	}
	for slug, rev := range map[string]int64{alice: 7, bob: 3} {
		if e, want := m.lookup(slug), testBundle(slug, rev); e == nil || !bytes.Equal(e.menus.en.body, want.Menus.EN.Body) ||
			!bytes.Equal(e.menus.en.gzip, want.Menus.EN.Gzip) || e.menus.en.etag != want.Menus.EN.ETag {
			t.Errorf("%s: the English menus are not the stored ones", slug)
		}
	}
	waitCtx, waitCancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer waitCancel()
	if err := m.WaitBucketRevision(waitCtx, last); err != nil {
		t.Errorf("WaitBucketRevision(%d) after ready: got %v, want nil at once", last, err)
	}
	for _, want := range []string{"skip invalid bundle", "slug=broken", "skip bundle under an invalid key", "Bad_Key"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log: got %q, want it to contain %q", logs.String(), want)
		}
	}

	h := newMirrorServer(t, m)
	if status, body := getEstablishment(t, h, alice, keyAlice); status != 200 || body != string(testDoc(alice, "establishment", 7).Body) {
		t.Errorf("GET %s: got %d %q, want 200 with the stored body", alice, status, body)
	}
	if status, _ := getEstablishment(t, h, dan, keyDan); status != 404 {
		t.Errorf("GET %s (draft): got %d, want 404", dan, status)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: got %v, want nil after cancel", err)
	}
}

func TestMirrorEmptyBucket(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	if e := m.lookup(alice); e != nil {
		t.Errorf("lookup in an empty bucket: got %+v, want nil", e)
	}
	// Values written after catch-up arrive live.
	putBundle(t, kv, testBundle(alice, 1))
	waitRevision(t, m, alice, 1)
}

// TestShardOfSpreadsSlugs checks that slugs of one pattern, as generated or imported names are,
// fall evenly over every shard of the mirror's index: the copy an added establishment costs is
// its shard, so no shard may hold many times its share.
func TestShardOfSpreadsSlugs(t *testing.T) {
	t.Parallel()
	const n = 64 * indexShards
	counts := make([]int, indexShards)
	for i := range n {
		counts[shardOf("restaurant-"+strconv.Itoa(i))]++
	}
	// Each count is about Poisson with mean 64: below 25 or above 115 is beyond 5 standard
	// deviations.
	for shard, c := range counts {
		if c < 25 || c > 115 {
			t.Fatalf("shard %d holds %d of %d slugs, want about %d", shard, c, n, n/indexShards)
		}
	}
}

// TestMirrorIndexesEstablishmentsAcrossShards loads establishments before and after catch-up,
// spread over many shards of the index, and finds each at its revision.
func TestMirrorIndexesEstablishmentsAcrossShards(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	const before, after = 200, 400
	slugs := make([]string, 0, before+after)
	for i := range before + after {
		slugs = append(slugs, "etablissement-"+strconv.Itoa(i))
	}
	for _, slug := range slugs[:before] {
		putBundle(t, kv, testBundle(slug, 1))
	}
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	var last uint64
	for i, slug := range slugs {
		last = putBundle(t, kv, testBundle(slug, int64(2+i%3)))
	}
	waitBucket(t, m, last)
	shards := map[int]bool{}
	for i, slug := range slugs {
		shards[shardOf(slug)] = true
		if e := m.lookup(slug); e == nil || e.revision != int64(2+i%3) {
			t.Fatalf("lookup(%s): got %+v, want revision %d", slug, e, 2+i%3)
		}
	}
	// A uniform hash puts n slugs in k(1 − (1 − 1/k)^n) shards of k on average.
	n, k := float64(len(slugs)), float64(indexShards)
	if expected := k * (1 - math.Pow(1-1/k, n)); float64(len(shards)) < 0.9*expected {
		t.Errorf("the establishments fell in %d shards of %d, %.0f expected: the slugs are not spread", len(shards), indexShards, expected)
	}
	if e := m.lookup("etablissement-absent"); e != nil {
		t.Errorf("lookup of an absent slug: got %+v, want nil", e)
	}
}

func TestMirrorUpdates(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 7))
	m, logs := startMirror(t, kv)
	waitReady(t, m)
	h := newMirrorServer(t, m)

	wantServed := func(t *testing.T, key string, rev int64) {
		t.Helper()
		status, body := getEstablishment(t, h, alice, key)
		if want := string(testDoc(alice, "establishment", rev).Body); status != 200 || body != want {
			t.Fatalf("GET %s: got %d %q, want 200 %q", alice, status, body, want)
		}
	}
	wantStatus := func(t *testing.T, key string, want int) {
		t.Helper()
		if status, body := getEstablishment(t, h, alice, key); status != want {
			t.Fatalf("GET %s: got %d %q, want %d", alice, status, body, want)
		}
	}

	// The steps depend on each other: they run in order.
	t.Run("higher revision switches", func(t *testing.T) {
		putBundle(t, kv, testBundle(alice, 8))
		waitRevision(t, m, alice, 8)
		wantServed(t, keyAlice, 8)
		w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice+"/menus/lunch?locale=en",
			http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {testDoc(alice, "menus/lunch.en", 7).ETag}})
		if w.Code != 200 || w.Body.String() != string(testDoc(alice, "menus/lunch.en", 8).Body) {
			t.Errorf("GET with the previous ETag: got %d %q, want 200 with revision 8", w.Code, w.Body.String())
		}
	})
	t.Run("lower revision is ignored", func(t *testing.T) {
		waitBucket(t, m, putBundle(t, kv, testBundle(alice, 5)))
		wantServed(t, keyAlice, 8)
		if !strings.Contains(logs.String(), "skip bundle older than the one held") {
			t.Errorf("log: got %q, want the older bundle logged", logs.String())
		}
	})
	t.Run("equal revision applies an access change", func(t *testing.T) {
		b := testBundle(alice, 8)
		b.KeyHash = keyHash("regenerated")
		waitBucket(t, m, putBundle(t, kv, b))
		wantStatus(t, keyAlice, 401)
		wantServed(t, "regenerated", 8)
	})
	t.Run("garbage is skipped", func(t *testing.T) {
		waitBucket(t, m, putRaw(t, kv, dockey.Key(alice), []byte(`{"slug":`)))
		wantServed(t, "regenerated", 8)
		waitBucket(t, m, putBundle(t, kv, dockey.Bundle{Slug: alice, Revision: 9, Status: dockey.StatusActive, APIEnabled: true}))
		wantServed(t, "regenerated", 8)
		wrong := testBundle(bob, 9)
		raw, err := json.Marshal(wrong)
		if err != nil {
			t.Fatal(err)
		}
		waitBucket(t, m, putRaw(t, kv, dockey.Key(alice), raw))
		wantServed(t, "regenerated", 8)
	})
	t.Run("delete removes", func(t *testing.T) {
		if err := kv.Delete(t.Context(), dockey.Key(alice)); err != nil {
			t.Fatal(err)
		}
		// Entries apply in bucket order: once a later write is handled, the delete is too.
		waitBucket(t, m, putBundle(t, kv, testBundle(bob, 1)))
		wantStatus(t, "regenerated", 404)
		if w := serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil); w.Code != 404 {
			t.Errorf("master menu after delete: got %d, want 404", w.Code)
		}
	})
	t.Run("no going back after a delete", func(t *testing.T) {
		waitBucket(t, m, putBundle(t, kv, testBundle(alice, 6)))
		wantStatus(t, keyAlice, 404)
		putBundle(t, kv, testBundle(alice, 9))
		waitRevision(t, m, alice, 9)
		wantServed(t, keyAlice, 9)
	})
	t.Run("purge removes", func(t *testing.T) {
		if err := kv.Purge(t.Context(), dockey.Key(alice)); err != nil {
			t.Fatal(err)
		}
		waitBucket(t, m, putBundle(t, kv, testBundle(bob, 2)))
		wantStatus(t, keyAlice, 404)
	})
	t.Run("new establishment after catch-up", func(t *testing.T) {
		const carol = "chez-carol"
		putBundle(t, kv, testBundle(carol, 1))
		waitRevision(t, m, carol, 1)
		if status, _ := getEstablishment(t, h, carol, "ak_"+carol); status != 200 {
			t.Errorf("GET %s: got %d, want 200", carol, status)
		}
	})
}

// A write under a key that names no bundle, the bucket's last, is applied too: the revision
// applied reaches the bucket's last sequence, which the lag of a read node is measured against.
func TestMirrorAppliesEveryKey(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 7))
	m, logs := startMirror(t, kv)
	waitReady(t, m)
	last := putRaw(t, kv, "other.key", []byte("not a bundle"))
	waitBucket(t, m, last)
	if got := m.Applied(); got != last {
		t.Errorf("Applied: got %d, want the bucket's last revision %d", got, last)
	}
	if !strings.Contains(logs.String(), "key=other.key") {
		t.Errorf("log: got %q, want the key that names no bundle", logs.String())
	}
}

func TestMirrorWaitTimesOut(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	m, _ := startMirror(t, kv)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := m.WaitRevision(ctx, alice, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRevision: got %v, want context.DeadlineExceeded", err)
	}
	if err := m.WaitBucketRevision(ctx, 1<<40); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitBucketRevision: got %v, want context.DeadlineExceeded", err)
	}
}

func TestMirrorRun(t *testing.T) {
	t.Parallel()
	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		kv, _ := newBucket(t)
		m, _ := startMirror(t, kv)
		waitReady(t, m)
		if err := m.Run(t.Context()); err == nil {
			t.Error("second Run: got nil, want an error")
		}
	})
	// A Run whose watch could not start returns, and can be run again: the process's supervisor
	// starts it again.
	t.Run("again after a failed start", func(t *testing.T) {
		t.Parallel()
		nc := natstest.Connect(t, natstest.Start(t))
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		cfg := jetstream.KeyValueConfig{Bucket: dockey.Bucket, History: 1}
		kv, err := js.CreateKeyValue(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMirror(kv, discardLogger())
		if err != nil {
			t.Fatal(err)
		}
		if err := js.DeleteKeyValue(t.Context(), dockey.Bucket); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(t.Context()); err == nil {
			t.Fatal("Run on a bucket that is gone: got nil, want an error")
		}
		if _, err := js.CreateKeyValue(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		putBundle(t, kv, testBundle(alice, 1))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		waitReady(t, m)
		if e := m.lookup(alice); e == nil || e.revision != 1 {
			t.Errorf("after a second Run: got %v, want alice at revision 1", e)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("second Run: %v", err)
		}
	})
	// Reads never stop: a watch that ends on its own leaves the mirror serving what it holds and
	// watching again, until its context ends.
	t.Run("connection closed", func(t *testing.T) {
		t.Parallel()
		kv, nc := newBucket(t)
		putBundle(t, kv, testBundle(alice, 1))
		logger, logs := newTestLogger()
		m, err := NewMirror(kv, logger)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		waitReady(t, m)
		nc.Close()
		for deadline := time.Now().Add(waitTimeout); !strings.Contains(logs.String(), "watch ended"); {
			if time.Now().After(deadline) {
				t.Fatalf("the end of the watch was not noticed:\n%s", logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned %v after the connection closed, want it to go on", err)
		default:
		}
		if e := m.lookup(alice); e == nil || e.revision != 1 {
			t.Errorf("after the connection closed: got %v, want alice at revision 1 still served", e)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run after its context ended: got %v, want nil", err)
			}
		case <-waitCtx(t).Done():
			t.Fatal("Run did not return after its context ended")
		}
	})
}

// TestMirrorConsistentReads reads while the bundle is replaced: every request sees the
// documents of one revision only, and never a lower revision than one it saw before.
func TestMirrorConsistentReads(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 1))
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	h := newMirrorServer(t, m)
	const last = 40

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	deadline := time.Now().Add(waitTimeout)
	for range 2 { // the readers spin: leave the writer room on a small machine
		wg.Go(func() {
			var seen int64
			for seen < last {
				if time.Now().After(deadline) {
					errs <- errors.New("last revision not served in time")
					return
				}
				e := m.lookup(alice)
				for _, d := range []*document{&e.establishment, &e.hours, e.menus.pick(localeEN), e.menuDetails["lunch"].pick(localeFR)} {
					if r := bodyRevision(d.body); r != e.revision {
						errs <- errors.New("entry mixes revisions")
						return
					}
				}
				w := serve(t, h, http.MethodGet, "/api/v1/establishments/"+alice+"/hours", withKey(keyAlice))
				r := bodyRevision(w.Body.Bytes())
				if r < seen {
					errs <- errors.New("served revision went backwards")
					return
				}
				seen = r
				runtime.Gosched() // let the writer in on a loaded machine
			}
		})
	}
	for rev := int64(2); rev <= last; rev++ {
		putBundle(t, kv, testBundle(alice, rev))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// bodyRevision returns the content_revision of a fixture body, or -1. Fixture bodies start with
// it, so it is read in place: the readers of the consistency test must not starve the writer.
func bodyRevision(body []byte) int64 {
	digits, ok := bytes.CutPrefix(body, []byte(`{"content_revision":`))
	if !ok {
		return -1
	}
	end := bytes.IndexByte(digits, ',')
	if end < 0 {
		return -1
	}
	r, err := strconv.ParseInt(string(digits[:end]), 10, 64)
	if err != nil {
		return -1
	}
	return r
}

func TestMirrorStatsFollowTheBundlesHeld(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 1))
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	want := func(t *testing.T, bundles ...dockey.Bundle) {
		t.Helper()
		var docs int64
		for _, b := range bundles {
			docs += int64(bundleDocumentBytes(&b))
		}
		got := m.Stats()
		if got.Establishments != int64(len(bundles)) || got.DocumentBytes != docs {
			t.Errorf("stats: got %+v, want %d establishments and %d document bytes", got, len(bundles), docs)
		}
		if got.HeldBytes < got.DocumentBytes { // no piece of these bundles' documents equals another
			t.Errorf("stats: %d bytes held for %d document bytes", got.HeldBytes, got.DocumentBytes)
		}
	}
	want(t, testBundle(alice, 1))

	waitBucket(t, m, putBundle(t, kv, testBundle(bob, 1)))
	want(t, testBundle(alice, 1), testBundle(bob, 1))

	smaller := testBundle(alice, 2)
	smaller.MenuDetails = nil
	waitBucket(t, m, putBundle(t, kv, smaller))
	want(t, smaller, testBundle(bob, 1))

	if err := kv.Delete(t.Context(), dockey.Key(bob)); err != nil {
		t.Fatal(err)
	}
	waitBucket(t, m, putBundle(t, kv, testBundle(alice, 3)))
	want(t, testBundle(alice, 3))
}

// TestMirrorSwitchesGenerations loads a second generation of the bucket beside the one served,
// then serves it, every establishment at once: one the new generation holds at a lower revision
// keeps its entry until the new one catches up, one it lacks is no longer served but its revision
// is still held, and the first generation's writes no longer count.
func TestMirrorSwitchesGenerations(t *testing.T) {
	t.Parallel()
	const carole = "chez-carole"
	kv, nc := newBucket(t)
	next := newGeneration(t, nc, 2)
	putBundle(t, kv, testBundle(alice, 5))
	putBundle(t, kv, testBundle(bob, 9))
	putBundle(t, kv, testBundle(carole, 3))
	putBundle(t, next, testBundle(alice, 5))
	putBundle(t, next, testBundle(bob, 4))
	last := putBundle(t, next, testBundle(dan, 1))

	m, _ := startMirror(t, kv)
	waitReady(t, m)
	m.Prepare(next)
	eventually(t, "the next generation loaded", func() bool {
		st := m.Stats()
		return st.Next != nil && st.Next.Establishments == 3 && st.Bucket == dockey.Bucket
	})
	if e := m.lookup(dan); e != nil {
		t.Fatalf("%s served before the switch", dan)
	}
	m.Switch(next, last)
	if err := m.WaitServing(waitCtx(t), next.Bucket(), last); err != nil {
		t.Fatal(err)
	}
	revisions := func() map[string]int64 {
		got := map[string]int64{}
		for _, slug := range []string{alice, bob, carole, dan} {
			if e := m.lookup(slug); e != nil {
				got[slug] = e.revision
			}
		}
		return got
	}
	if diff := cmp.Diff(map[string]int64{alice: 5, bob: 9, dan: 1}, revisions()); diff != "" {
		t.Errorf("after the switch (-want +got):\n%s", diff)
	}
	if st := m.Stats(); st.Next != nil || st.Bucket != next.Bucket() || st.Establishments != 3 {
		t.Errorf("stats after the switch: %+v", st)
	}
	// Lower revisions of the new generation are skipped, higher ones served; the old
	// generation is no longer followed.
	putBundle(t, kv, testBundle(alice, 50))
	putBundle(t, next, testBundle(carole, 2))
	putBundle(t, next, testBundle(bob, 8))
	waitBucket(t, m, putBundle(t, next, testBundle(dan, 2)))
	if diff := cmp.Diff(map[string]int64{alice: 5, bob: 9, dan: 2}, revisions()); diff != "" {
		t.Errorf("after lower writes (-want +got):\n%s", diff)
	}
	putBundle(t, next, testBundle(carole, 4))
	waitBucket(t, m, putBundle(t, next, testBundle(bob, 10)))
	if diff := cmp.Diff(map[string]int64{alice: 5, bob: 10, carole: 4, dan: 2}, revisions()); diff != "" {
		t.Errorf("after higher writes (-want +got):\n%s", diff)
	}
}

// TestMirrorAbandonsAPreparedGeneration drops a generation it prepared, and a switch asked of a
// generation only prepares nothing else: a later Prepare of another bucket does not inherit it.
func TestMirrorAbandonsAPreparedGeneration(t *testing.T) {
	t.Parallel()
	kv, nc := newBucket(t)
	second, third := newGeneration(t, nc, 2), newGeneration(t, nc, 3)
	putBundle(t, kv, testBundle(alice, 5))
	putBundle(t, third, testBundle(alice, 6))
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	m.Switch(second, 1<<40) // never reached
	eventually(t, "the second generation loading", func() bool { return m.Stats().Next != nil })
	m.Prepare(third)
	eventually(t, "the third generation loaded", func() bool {
		st := m.Stats()
		return st.Next != nil && st.Next.Bucket == third.Bucket() && st.Next.Establishments == 1
	})
	waitBucket(t, m, putBundle(t, kv, testBundle(bob, 1)))
	if st := m.Stats(); st.Bucket != dockey.Bucket {
		t.Errorf("serving %s after a Prepare, want %s", st.Bucket, dockey.Bucket)
	}
	m.Abandon()
	eventually(t, "the prepared generation dropped", func() bool { return m.Stats().Next == nil })
	if e := m.lookup(alice); e == nil || e.revision != 5 {
		t.Errorf("%s after Abandon: %+v, want revision 5", alice, e)
	}
}

// eventually polls f until it returns true or waitTimeout passes.
func eventually(tb testing.TB, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !f() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, waitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMirrorOutlivesItsGenerationRemoved: the generation served is removed while the node still
// waits for the next one to catch up; the node serves what it holds, then switches.
func TestMirrorOutlivesItsGenerationRemoved(t *testing.T) {
	t.Parallel()
	kv, nc := newBucket(t)
	next := newGeneration(t, nc, 2)
	putBundle(t, kv, testBundle(alice, 5))
	putBundle(t, next, testBundle(alice, 5))
	m, _ := startMirror(t, kv)
	waitReady(t, m)
	m.Switch(next, 2) // not reached yet
	eventually(t, "the next generation loaded", func() bool { st := m.Stats(); return st.Next != nil && st.Next.Establishments == 1 })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(t.Context(), dockey.Bucket); err != nil {
		t.Fatal(err)
	}
	if e := m.lookup(alice); e == nil || e.revision != 5 {
		t.Fatalf("%s after its generation was removed: %+v, want revision 5 still served", alice, e)
	}
	if err := m.WaitServing(waitCtx(t), next.Bucket(), putBundle(t, next, testBundle(alice, 6))); err != nil {
		t.Fatal(err)
	}
	if e := m.lookup(alice); e == nil || e.revision != 6 {
		t.Errorf("%s after the switch: %+v, want revision 6", alice, e)
	}
}

// A watch's bundles, decoded on several goroutines, come in the order the bucket delivered them,
// each decoded as decodeServed decodes it alone; the end of the initial values comes between the
// values and the changes; once the watch is stopped, the channel closes.
func TestDecodeAheadKeepsTheWatchOrder(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	const slugs, rounds = 40, 5
	for r := range rounds {
		for i := range slugs {
			putBundle(t, kv, testBundle(fmt.Sprintf("etablissement-%d", i), int64(r+1)))
		}
	}
	putRaw(t, kv, dockey.Key("etablissement-0"), []byte("not a bundle"))
	if err := kv.Delete(t.Context(), dockey.Key("etablissement-1")); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	w, err := kv.Watch(ctx, dockey.Watch)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	updates := decodeAhead(ctx, w.Updates(), 4)
	var last uint64
	initial := 0
	for d := range updates {
		if d.kve == nil {
			break // the end of the initial values: the last value of each key
		}
		initial++
		if rev := d.kve.Revision(); rev <= last {
			t.Fatalf("revision %d after %d", rev, last)
		}
		last = d.kve.Revision()
		switch {
		case d.kve.Operation() != jetstream.KeyValuePut:
			if d.e != nil || d.err != nil {
				t.Errorf("%s: a delete decoded: %v, %v", d.kve.Key(), d.e, d.err)
			}
		case d.slug == "etablissement-0":
			if d.err == nil {
				t.Errorf("an invalid bundle decoded without error")
			}
		default:
			want, wantErr := decodeServed(d.slug, d.kve.Value())
			if d.err != nil || wantErr != nil || d.e.revision != want.revision || d.e.size != want.size {
				t.Errorf("%s: decoded %+v (%v), alone %+v (%v)", d.slug, d.e, d.err, want, wantErr)
			}
		}
	}
	if initial != slugs {
		t.Errorf("%d initial values, want %d", initial, slugs)
	}
	// Changes after the initial values, more than the channels hold, then a stop.
	for i := range 3 * decodeDepth {
		putBundle(t, kv, testBundle(fmt.Sprintf("etablissement-%d", i%slugs), int64(rounds+1+i)))
	}
	stop()
	_ = w.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-updates:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the deliveries of a stopped watch never end")
		}
	}
}
