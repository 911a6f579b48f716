package readapi

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// putAhead stores b as the day ahead of its establishment, over revision base from starts.
func putAhead(tb testing.TB, kv jetstream.KeyValue, b dockey.Bundle, base, starts int64) uint64 {
	tb.Helper()
	b.Base, b.Starts = base, starts
	raw, err := dockey.EncodeBundle(&b)
	if err != nil {
		tb.Fatalf("encode bundle: %v", err)
	}
	return putRaw(tb, kv, dockey.AheadKey(b.Slug), raw)
}

// The bundle of a day ahead is served from its start, beside the current entry it was rendered
// beside only; what is stored in place of that entry takes over.
func TestMirrorServesTheDayAheadFromItsStart(t *testing.T) {
	t.Parallel()
	kv, _ := newBucket(t)
	putBundle(t, kv, testBundle(alice, 7))
	putAhead(t, kv, testBundle(alice, 8), 7, 1000)
	putAhead(t, kv, testBundle(bob, 3), 2, 1000) // no current entry: never served

	var now atomic.Int64
	now.Store(999)
	m, logs := startMirror(t, kv, func(m *Mirror) { m.SetClock(now.Load) })
	waitReady(t, m)
	h := newMirrorServer(t, m)
	served := func(t *testing.T, want int64) {
		t.Helper()
		status, body := getEstablishment(t, h, alice, keyAlice)
		if w := string(testDoc(alice, "establishment", want).Body); status != 200 || body != w {
			t.Fatalf("GET %s at %d: got %d %q, want 200 at revision %d", alice, now.Load(), status, body, want)
		}
	}

	served(t, 7)
	now.Store(1000)
	served(t, 8)
	if status, _ := getEstablishment(t, h, bob, keyBob); status != 404 {
		t.Errorf("GET %s, a day ahead without a current entry: got %d, want 404", bob, status)
	}

	// A change stored in place of the entry the day ahead followed takes over, until the day
	// ahead follows it too.
	waitBucket(t, m, putBundle(t, kv, testBundle(alice, 9)))
	served(t, 9)
	waitBucket(t, m, putAhead(t, kv, testBundle(alice, 10), 9, 1000))
	served(t, 10)
	now.Store(999)
	served(t, 9)
	now.Store(1000)

	// The day started: its bundle stored as the current one, the day ahead removed.
	waitBucket(t, m, putBundle(t, kv, testBundle(alice, 10)))
	served(t, 10)
	if err := kv.Delete(t.Context(), dockey.AheadKey(alice)); err != nil {
		t.Fatal(err)
	}
	waitBucket(t, m, putBundle(t, kv, testBundle(bob, 4)))
	served(t, 10)

	// A day ahead without its start, or not above the entry it follows, is refused.
	waitBucket(t, m, putAhead(t, kv, testBundle(alice, 11), 10, 0))
	waitBucket(t, m, putAhead(t, kv, testBundle(alice, 10), 10, 1000))
	served(t, 10)
	if got := strings.Count(logs.String(), "skip invalid bundle of a day ahead"); got != 2 {
		t.Errorf("log: %d refused days ahead, want 2:\n%s", got, logs.String())
	}
	if st := m.Stats(); st.Establishments != 2 {
		t.Errorf("stats: %d establishments, want 2 (days ahead are not counted)", st.Establishments)
	}
}
