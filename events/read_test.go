package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// fill appends n records alternating between two establishments and returns their command ids in
// log order.
func fill(tb testing.TB, st *events.Store, n int) []string {
	tb.Helper()
	var ids []string
	last := map[string]uint64{}
	for i := range n {
		slug := []string{"alpha", "beta"}[i%2]
		id := fmt.Sprintf("cmd-%d", i+1)
		last[slug] = mustAppend(tb, st, slug, last[slug], id, event("t", fmt.Sprintf(`{"i":%d}`, i)))
		ids = append(ids, id)
	}
	return ids
}

// collect returns a Replay or Follow callback that records what it sees.
func collect(into *[]events.Record) func(events.Record) error {
	return func(r events.Record) error {
		*into = append(*into, r)
		return nil
	}
}

func commandIDs(records []events.Record) []string {
	var ids []string
	for _, r := range records {
		ids = append(ids, r.CommandID)
	}
	return ids
}

func TestReplay(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ids := fill(t, st, 6)

	tests := []struct {
		name     string
		from     uint64
		wantIDs  []string
		wantLast uint64
	}{
		{"from zero", 0, ids, 6},
		{"from the start", 1, ids, 6},
		{"from the middle", 4, ids[3:], 6},
		{"from the last", 6, ids[5:], 6},
		{"past the end", 7, nil, 6},
		{"far past the end", 100, nil, 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []events.Record
			last, err := st.Replay(t.Context(), tt.from, collect(&got))
			if err != nil {
				t.Fatalf("Replay(%d): %v", tt.from, err)
			}
			if diff := cmp.Diff(tt.wantIDs, commandIDs(got)); diff != "" {
				t.Errorf("Replay(%d) command ids (-want +got):\n%s", tt.from, diff)
			}
			for i, r := range got {
				if want := max(tt.from, 1) + uint64(i); r.Sequence != want {
					t.Errorf("Replay(%d) record %d: got sequence %d, want %d", tt.from, i, r.Sequence, want)
				}
			}
			if last != tt.wantLast {
				t.Errorf("Replay(%d): got last %d, want %d", tt.from, last, tt.wantLast)
			}
		})
	}
}

func TestReplayEmptyStream(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	calls := 0
	last, err := st.Replay(ctx, 1, func(events.Record) error {
		calls++
		return nil
	})
	if err != nil || last != 0 || calls != 0 {
		t.Errorf("Replay of an empty stream: got last %d, error %v, %d calls, want 0, nil, 0", last, err, calls)
	}
	slugs, err := st.Slugs(ctx)
	if err != nil || len(slugs) != 0 {
		t.Errorf("Slugs of an empty stream: got %v, %v, want none", slugs, err)
	}
}

func TestReplayStopsOnError(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	fill(t, st, 5)
	stop := errors.New("projection failed")
	var seen []uint64
	last, err := st.Replay(t.Context(), 1, func(r events.Record) error {
		if r.Sequence == 3 {
			return stop
		}
		seen = append(seen, r.Sequence)
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("Replay: got error %v, want %v", err, stop)
	}
	if last != 2 {
		t.Errorf("Replay: got last %d, want 2", last)
	}
	if diff := cmp.Diff([]uint64{1, 2}, seen); diff != "" {
		t.Errorf("sequences seen (-want +got):\n%s", diff)
	}
}

func TestReplayEndsAtTheCallsLastRecord(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	fill(t, st, 3)
	var got []events.Record
	last, err := st.Replay(t.Context(), 1, func(r events.Record) error {
		got = append(got, r)
		if r.Sequence == 1 {
			// Stored while the replay runs: not part of it.
			mustAppend(t, st, "gamma", 0, "late", event("t", `{}`))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if last != 3 || len(got) != 3 {
		t.Errorf("Replay: got last %d and %d records, want 3 and 3", last, len(got))
	}
}

func TestFollow(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ids := fill(t, st, 2)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	records := make(chan events.Record)
	done := make(chan error, 1)
	go func() {
		done <- st.Follow(ctx, 2, func(r events.Record) error {
			select {
			case records <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	next := func() events.Record {
		t.Helper()
		select {
		case r := <-records:
			return r
		case err := <-done:
			t.Fatalf("Follow returned early: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("no record from Follow within 10s")
		}
		return events.Record{}
	}

	if r := next(); r.Sequence != 2 || r.CommandID != ids[1] {
		t.Errorf("first record: got %d %s, want 2 %s", r.Sequence, r.CommandID, ids[1])
	}
	seq := mustAppend(t, st, "gamma", 0, "after-start", event("t", `{}`))
	if r := next(); r.Sequence != seq || r.CommandID != "after-start" {
		t.Errorf("record appended after Follow started: got %d %s, want %d after-start", r.Sequence, r.CommandID, seq)
	}

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Follow after cancel: got %v, want %v", err, context.Canceled)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Follow did not return within 10s of cancel")
	}
}

func TestFollowStopsOnError(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	fill(t, st, 3)
	stop := errors.New("handler failed")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := st.Follow(ctx, 1, func(r events.Record) error {
		if r.Sequence == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("Follow: got %v, want %v", err, stop)
	}
}

// A follow whose consumer is gone and cannot be made again for a while (here the stream takes no
// more consumers; on a cluster, one electing its leaders refuses them) ends with ErrStalled once
// a record waits, rather than wait on the client's growing intervals between attempts; a new
// follow says at once that it has no consumer (ErrNoConsumer) while none can be made, and from
// the record after the last delivered delivers it once one can.
func TestFollowEndsWhenItsConsumerStalls(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.StartLimited(t, 2))
	st := openStore(t, nc, events.Config{})
	fill(t, st, 1)
	records := make(chan events.Record, 10)
	follow := func(from uint64) <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- st.Follow(t.Context(), from, func(r events.Record) error {
				records <- r
				return nil
			})
		}()
		return done
	}
	next := func() events.Record {
		t.Helper()
		select {
		case r := <-records:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("no record from Follow within 10s")
		}
		return events.Record{}
	}
	done := follow(1)
	if r := next(); r.Sequence != 1 {
		t.Fatalf("first record: %d, want 1", r.Sequence)
	}

	stream := logStream(t, nc)
	// The follow's consumer goes, and the two the stream takes are held: the client, which makes
	// its consumer again as soon as it sees it gone, may take the second place first, and loses
	// it again.
	if _, err := stream.CreateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "hold-1"}); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		names := stream.ConsumerNames(t.Context())
		for name := range names.Name() {
			if name != "hold-1" {
				_ = stream.DeleteConsumer(t.Context(), name)
			}
		}
		if _, err := stream.CreateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "hold-2"}); err == nil {
			break
		} else if attempt == 100 {
			t.Fatalf("the stream's last place not taken: %v", err)
		}
	}
	seq := mustAppend(t, st, "gamma", 0, "while-stalled", event("t", `{}`))
	select {
	case err := <-done:
		if !errors.Is(err, events.ErrStalled) {
			t.Fatalf("Follow: %v, want %v", err, events.ErrStalled)
		}
	case r := <-records:
		t.Fatalf("record %d delivered without a consumer", r.Sequence)
	case <-time.After(20 * time.Second):
		t.Fatal("Follow neither delivered nor ended within 20s of the record appended")
	}

	// While no consumer can be made, a new follow says so at once.
	if err := <-follow(seq); !errors.Is(err, events.ErrNoConsumer) {
		t.Fatalf("Follow without room for its consumer: %v, want %v", err, events.ErrNoConsumer)
	}
	for _, name := range []string{"hold-1", "hold-2"} {
		if err := stream.DeleteConsumer(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	follow(seq)
	if r := next(); r.Sequence != seq || r.CommandID != "while-stalled" {
		t.Errorf("after following again: %d %s, want %d while-stalled", r.Sequence, r.CommandID, seq)
	}
}

// A partial replay passes the records of the establishments it keeps, up to the sequence it is
// given, and passes over an unreadable message of theirs, telling it.
func TestReplayPart(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	st := openStore(t, nc, events.Config{})
	var a, b uint64
	a = mustAppend(t, st, "alpha", a, "a-1", event("t", `{}`))
	b = mustAppend(t, st, "beta", b, "b-1", event("t", `{}`))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := js.Publish(t.Context(), "events.alpha", []byte("not a record"))
	if err != nil {
		t.Fatal(err)
	}
	a = mustAppend(t, st, "alpha", bad.Sequence, "a-2", event("t", `{}`))
	to := a
	mustAppend(t, st, "alpha", a, "a-3", event("t", `{}`)) // after to

	var got []string
	var unreadable []uint64
	err = st.ReplayPart(t.Context(), 1, to, func(slug string) bool { return slug == "alpha" },
		func(r events.Record) error { got = append(got, r.CommandID); return nil }, nil,
		func(seq uint64, err error) { unreadable = append(unreadable, seq) })
	if err != nil {
		t.Fatalf("ReplayPart: %v", err)
	}
	if fmt.Sprint(got) != "[a-1 a-2]" || fmt.Sprint(unreadable) != fmt.Sprint([]uint64{bad.Sequence}) {
		t.Errorf("ReplayPart: got %v, unreadable %v; want [a-1 a-2] and %d", got, unreadable, bad.Sequence)
	}

	// The records passed over, given as stored, decode to the records; not as another's.
	type stored struct {
		slug string
		seq  uint64
		data []byte
	}
	var others []stored
	got = nil
	err = st.ReplayPart(t.Context(), 1, to, func(slug string) bool { return slug == "beta" },
		func(r events.Record) error { got = append(got, r.CommandID); return nil },
		func(slug string, seq uint64, data []byte) error {
			others = append(others, stored{slug, seq, data})
			return nil
		}, nil)
	if err != nil {
		t.Fatalf("ReplayPart: %v", err)
	}
	if fmt.Sprint(got) != "[b-1]" || len(others) != 3 {
		t.Fatalf("ReplayPart: kept %v and passed over %d, want [b-1] and 3", got, len(others))
	}
	var decoded []string
	for _, o := range others {
		rec, err := events.DecodeRecord(o.slug, o.seq, o.data)
		switch {
		case o.seq == bad.Sequence:
			if !errors.Is(err, events.ErrInvalidRecord) {
				t.Errorf("DecodeRecord of the unreadable message: %v, want ErrInvalidRecord", err)
			}
		case err != nil:
			t.Errorf("DecodeRecord of seq %d: %v", o.seq, err)
		default:
			if rec.Sequence != o.seq || rec.Establishment != o.slug {
				t.Errorf("DecodeRecord: seq %d of %s, want %d of %s", rec.Sequence, rec.Establishment, o.seq, o.slug)
			}
			decoded = append(decoded, rec.CommandID)
			if _, err := events.DecodeRecord("beta", o.seq, o.data); !errors.Is(err, events.ErrInvalidRecord) {
				t.Errorf("DecodeRecord as another establishment's: %v, want ErrInvalidRecord", err)
			}
		}
	}
	if fmt.Sprint(decoded) != "[a-1 a-2]" {
		t.Errorf("decoded %v, want [a-1 a-2]", decoded)
	}
}

// TestChain reads an establishment's records back from one of them through the record each
// expected before it, and says when it cannot.
func TestChain(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	st := openStore(t, nc, events.Config{})
	ctx := t.Context()
	fill(t, st, 6) // alpha at 1, 3, 5; beta at 2, 4, 6

	for _, tc := range []struct {
		after, last uint64
		want        []uint64
	}{
		{0, 5, []uint64{1, 3, 5}},
		{1, 5, []uint64{3, 5}},
		{3, 3, nil},
		{0, 1, []uint64{1}},
	} {
		recs, ok, err := st.Chain(ctx, "alpha", tc.after, tc.last)
		var got []uint64
		for _, r := range recs {
			got = append(got, r.Sequence)
			if r.Establishment != "alpha" {
				t.Errorf("Chain(%d, %d) gave a record of %s", tc.after, tc.last, r.Establishment)
			}
		}
		if err != nil || !ok || !slices.Equal(got, tc.want) {
			t.Errorf("Chain(alpha, %d, %d) = %v, %t, %v; want %v", tc.after, tc.last, got, ok, err, tc.want)
		}
	}
	// Not a chain of alpha's: 2 is beta's, 4 is not one of alpha's records before 5.
	for _, c := range [][2]uint64{{0, 2}, {4, 5}, {5, 3}} {
		if recs, ok, err := st.Chain(ctx, "alpha", c[0], c[1]); ok || err != nil || recs != nil {
			t.Errorf("Chain(alpha, %d, %d) = %d records, %t, %v; want none, false", c[0], c[1], len(recs), ok, err)
		}
	}

	// A record stored without the expectation of its previous one ends what can be read so.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.Encode(events.Record{CommandID: "raw", Establishment: "alpha", Events: []events.Envelope{
		{ID: "raw/0", Type: "t", Establishment: "alpha", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := events.Subject("alpha")
	ack, err := js.Publish(ctx, subject, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Chain(ctx, "alpha", 5, ack.Sequence); ok || err != nil {
		t.Errorf("Chain through a record without expectation: ok %t, %v; want false", ok, err)
	}
	recs, err := st.Range(ctx, "alpha", ack.Sequence, 0)
	if err != nil || len(recs) != 1 || recs[0].PreviousKnown {
		t.Errorf("Range of the record without expectation = %+v, %v; want it with PreviousKnown false", recs, err)
	}
}

// TestChainIsBounded: past maxChain records, Chain leaves the reading to Before.
func TestChainIsBounded(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	var last uint64
	for i := range 40 {
		last = mustAppend(t, st, "alpha", last, fmt.Sprintf("cmd-%d", i), event("t", `{}`))
	}
	if recs, ok, err := st.Chain(t.Context(), "alpha", 0, last); ok || err != nil || recs != nil {
		t.Errorf("Chain of 40 records = %d, %t, %v; want none, false", len(recs), ok, err)
	}
	if recs, ok, err := st.Chain(t.Context(), "alpha", 20, last); !ok || err != nil || len(recs) != 20 {
		t.Errorf("Chain of the last 20 records = %d, %t, %v; want 20, true", len(recs), ok, err)
	}
}

// BenchmarkRecordsFarApart reads the three records of an establishment between which 30,000
// records of others lie, as the projector and the write side load an establishment some days
// after its last change: under its subject (Before), and one by one through the record each
// follows (Chain).
func BenchmarkRecordsFarApart(b *testing.B) {
	st := openStore(b, natstest.Connect(b, natstest.Start(b)), events.Config{})
	payload := fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 4000))
	var seqs []uint64
	var last uint64
	for round := range 3 {
		last = mustAppend(b, st, "alpha", last, fmt.Sprintf("alpha-%d", round), event("t", payload))
		seqs = append(seqs, last)
		for i := range 10_000 {
			mustAppend(b, st, fmt.Sprintf("other-%d-%d", round, i), 0, fmt.Sprintf("other-%d-%d", round, i), event("t", payload))
		}
	}
	next := mustAppend(b, st, "alpha", last, "alpha-next", event("t", payload))
	b.Run("subject", func(b *testing.B) {
		for b.Loop() {
			recs, err := st.Before(b.Context(), "alpha", 1, next, nil)
			if err != nil || len(recs) != 3 {
				b.Fatalf("Before = %d records, %v", len(recs), err)
			}
		}
	})
	b.Run("chain", func(b *testing.B) {
		for b.Loop() {
			recs, ok, err := st.Chain(b.Context(), "alpha", 0, seqs[2])
			if err != nil || !ok || len(recs) != 3 {
				b.Fatalf("Chain = %d records, %t, %v", len(recs), ok, err)
			}
		}
	})
}
