package readapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/readapi/usage"
)

// connect opens a NATS connection closed with the test.
func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// runLoop runs loop until the test ends, and fails the test if it fails.
func runLoop(t *testing.T, loop func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := loop(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestUsageSummedAcrossReadNodes: two read nodes sharing their quotas serve one key, 200s, 304s
// and 429s; a reader on a third connection sums what both report, ignoring reports that are
// malformed, of another version or of the quota exchange; and the counts leave its sums once a
// window old, on a fake clock.
func TestUsageSummedAcrossReadNodes(t *testing.T) {
	srv := natstest.Start(t)
	clock := newFakeClock()
	const quota = 10
	reader, err := usage.Start(connect(t, srv.ClientURL()), usage.Config{Quota: 5, Logger: discardLogger(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })

	nodes := make([]*Server, 2)
	for i := range nodes {
		nodes[i] = newTestServer(t, fixtureSource(t), Config{KeyQuota: quota, IPQuota: -1, Now: clock.Now})
		nc := connect(t, srv.ClientURL())
		runLoop(t, func(ctx context.Context) error { return nodes[i].ShareQuotas(ctx, nc, 20*time.Millisecond) })
		runLoop(t, func(ctx context.Context) error { return nodes[i].ReportUsage(ctx, nc, 20*time.Millisecond) })
	}
	awaitSharing(t, nodes)

	// Reports that would count if misread: another version, a cut record, the quota exchange's.
	sum := sha256.Sum256([]byte(keyAlice))
	var k usage.Key
	copy(k[:], sum[:])
	forged := usage.AppendRecord(usage.AppendHeader(nil, usage.Header{At: clock.Now(), Quota: 1, Window: time.Hour}), k, 1000, 1000, 1000)
	other := connect(t, srv.ClientURL())
	for _, data := range [][]byte{append([]byte{2}, forged[1:]...), forged[:len(forged)-1], append([]byte{1}, make([]byte, 16+8+1+21)...)} {
		if err := other.Publish(usage.Subject, data); err != nil {
			t.Fatal(err)
		}
	}

	target := "/api/v1/establishments/" + alice
	want := map[int]int64{}
	for i := range 40 {
		header := withKey(keyAlice)
		if i%4 == 3 {
			header = withETag(keyAlice, etag(alice, "establishment"))
		}
		w := serve(t, nodes[i%2].Handler(), http.MethodGet, target, header)
		want[w.Code]++
	}
	if want[http.StatusOK] == 0 || want[http.StatusNotModified] == 0 || want[http.StatusTooManyRequests] == 0 {
		t.Fatalf("answers %v: want 200s, 304s and 429s", want)
	}
	hash := hex.EncodeToString(sum[:])
	wantUsage := usage.Usage{
		Requests: want[http.StatusOK], NotModified: want[http.StatusNotModified], Limited: want[http.StatusTooManyRequests],
		Quota: quota, Window: time.Hour,
	}
	deadline := time.Now().Add(10 * time.Second)
	for got := reader.Of(hash); got != wantUsage; got = reader.Of(hash) {
		if time.Now().After(deadline) {
			t.Fatalf("reader: got %+v, want %+v, the answers of both nodes", got, wantUsage)
		}
		time.Sleep(5 * time.Millisecond)
	}

	clock.Advance(time.Hour)
	if got := reader.Of(hash); got != (usage.Usage{Quota: quota, Window: time.Hour}) {
		t.Errorf("a window later: got %+v, want no use", got)
	}
}

// awaitSharing waits until every node tallies its keys' use, so that no answer goes untallied,
// and shares its quotas with the others.
func awaitSharing(t *testing.T, nodes []*Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range nodes {
		for m := s.keyQuota.lim.nodes.Load(); !s.keyQuota.lim.tallying.Load() || m == nil || m.n != len(nodes); m = s.keyQuota.lim.nodes.Load() {
			if time.Now().After(deadline) {
				t.Fatal("a read node does not tally its keys' use or does not see the others")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestUseTallied: while tallying, a key's admitted requests, refusals and 304s are tallied, a
// look for a 412 is not; a report takes them and starts again from zero; a shard's table keeps
// its bound, the answers past it counted as untallied; and nothing is tallied while not
// reporting.
func TestUseTallied(t *testing.T) {
	l := newLimiter(2, int64(time.Hour), limiterShards) // one client per shard
	k := clientKey{1}
	l.take(k, 0)
	if got := l.appendUse(nil); len(got) != 0 {
		t.Fatalf("tallied while not reporting: %x", got)
	}
	l.tallying.Store(true)
	for range 3 {
		l.take(k, 0)
	}
	l.revalidated(k, 0)
	l.peek(k, 0)
	recs := l.appendUse(nil)
	want := usage.AppendRecord(nil, usage.Key(k), 1, 1, 2) // the first take spent one, untallied
	if string(recs) != string(want) {
		t.Errorf("records: got %x, want %x", recs, want)
	}
	if got := l.appendUse(nil); len(got) != 0 {
		t.Errorf("a second report repeats the first: %x", got)
	}

	for i := range 4 * limiterShards {
		var c clientKey
		c[0], c[1] = byte(i), byte(i>>8)
		l.take(c, 0)
	}
	if n := len(l.appendUse(nil)) / usage.RecordSize; n > limiterShards {
		t.Errorf("%d clients tallied, bound %d", n, limiterShards)
	}
	if l.untallied.Load() == 0 {
		t.Error("answers past the bound are not counted as untallied")
	}
}
