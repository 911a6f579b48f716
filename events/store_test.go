package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// newStore opens a Store on a fresh single JetStream server.
func newStore(tb testing.TB) *events.Store {
	tb.Helper()
	return openStore(tb, natstest.Connect(tb, natstest.Start(tb)), events.Config{})
}

func openStore(tb testing.TB, nc *nats.Conn, cfg events.Config) *events.Store {
	tb.Helper()
	st, err := events.Open(tb.Context(), nc, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return st
}

// logStream returns the log's stream, as nc sees it.
func logStream(tb testing.TB, nc *nats.Conn) jetstream.Stream {
	tb.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	stream, err := js.Stream(tb.Context(), events.StreamName)
	if err != nil {
		tb.Fatal(err)
	}
	return stream
}

// event returns a valid event whose payload is the given JSON.
func event(typ, payload string) events.Envelope {
	return events.Envelope{Type: typ, Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(payload)}
}

// mustAppend appends and fails the test on any error.
func mustAppend(tb testing.TB, st *events.Store, slug string, expected uint64, commandID string, evs ...events.Envelope) uint64 {
	tb.Helper()
	seq, err := st.Append(tb.Context(), slug, expected, commandID, evs)
	if err != nil {
		tb.Fatalf("Append(%s, %d, %s): %v", slug, expected, commandID, err)
	}
	return seq
}

// replayAll returns every record of the log.
func replayAll(tb testing.TB, st *events.Store) []events.Record {
	tb.Helper()
	var all []events.Record
	if _, err := st.Replay(tb.Context(), 1, func(r events.Record) error {
		all = append(all, r)
		return nil
	}); err != nil {
		tb.Fatalf("Replay: %v", err)
	}
	return all
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     events.Config
		wantErr bool
	}{
		{"zero value", events.Config{}, false},
		{"three replicas in memory", events.Config{Replicas: 3, Duplicates: time.Minute, MemoryStorage: true}, false},
		{"five replicas", events.Config{Replicas: 5}, false},
		{"negative replicas", events.Config{Replicas: -1}, true},
		{"six replicas", events.Config{Replicas: 6}, true},
		{"negative duplicates window", events.Config{Duplicates: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate(%+v): got %v, want error %t", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	if _, err := events.Open(t.Context(), nil, events.Config{}); err == nil {
		t.Errorf("Open with a nil connection: got nil error, want one")
	}
	nc := natstest.Connect(t, natstest.Start(t))
	if _, err := events.Open(t.Context(), nc, events.Config{Replicas: -1}); err == nil {
		t.Errorf("Open with replicas -1: got nil error, want one")
	}
}

func TestOpenTwice(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	first := openStore(t, nc, events.Config{})
	seq := mustAppend(t, first, "chez-lou", 0, "cmd-1", event("establishment.created", `{}`))

	// A second run, with a changed window, finds the stream and its records.
	second := openStore(t, nc, events.Config{Duplicates: 10 * time.Minute})
	got, err := second.LastSequence(t.Context(), "chez-lou")
	if err != nil {
		t.Fatalf("LastSequence: %v", err)
	}
	if got != seq {
		t.Errorf("LastSequence after reopening: got %d, want %d", got, seq)
	}
	if _, err := second.Append(t.Context(), "chez-lou", seq, "cmd-1", []events.Envelope{event("establishment.created", `{}`)}); !errors.Is(err, events.ErrDuplicate) {
		t.Errorf("Append of the same command after reopening: got %v, want %v", err, events.ErrDuplicate)
	}
}

func TestAppendHistoryRoundTrip(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()

	in := []events.Envelope{
		event("establishment.created", `{"name":"Chez Lou"}`),
		event("menu_type.added", `{"slug":"midi"}`),
		{ID: "chosen-id", Type: "api_key.regenerated", Time: testTime.Add(time.Second), SchemaVersion: 2, Payload: json.RawMessage(`{"hash":"x"}`)},
	}
	seq1 := mustAppend(t, st, "chez-lou", 0, "cmd-1", in...)
	if in[0].ID != "" || in[0].Establishment != "" {
		t.Errorf("Append modified the caller's events: got %+v", in[0])
	}
	seq2 := mustAppend(t, st, "chez-lou", seq1, "cmd-2", event("hours.changed", `[1,2]`))
	if seq2 <= seq1 {
		t.Errorf("second sequence: got %d, want more than %d", seq2, seq1)
	}

	got, err := st.History(ctx, "chez-lou")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	want := []events.Record{
		{Sequence: seq1, CommandID: "cmd-1", Establishment: "chez-lou", PreviousKnown: true, Events: []events.Envelope{
			{ID: "cmd-1/0", Type: "establishment.created", Establishment: "chez-lou", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`{"name":"Chez Lou"}`)},
			{ID: "cmd-1/1", Type: "menu_type.added", Establishment: "chez-lou", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`{"slug":"midi"}`)},
			{ID: "chosen-id", Type: "api_key.regenerated", Establishment: "chez-lou", Time: testTime.Add(time.Second), SchemaVersion: 2, Payload: json.RawMessage(`{"hash":"x"}`)},
		}},
		{Sequence: seq2, CommandID: "cmd-2", Establishment: "chez-lou", Previous: seq1, PreviousKnown: true, Events: []events.Envelope{
			{ID: "cmd-2/0", Type: "hours.changed", Establishment: "chez-lou", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`[1,2]`)},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}

	// The three events of the first command are one stored message.
	if all := replayAll(t, st); len(all) != 2 {
		t.Errorf("messages in the stream: got %d, want 2", len(all))
	}
	last, err := st.LastSequence(ctx, "chez-lou")
	if err != nil {
		t.Fatalf("LastSequence: %v", err)
	}
	if last != seq2 {
		t.Errorf("LastSequence: got %d, want %d", last, seq2)
	}
}

func TestHistoryOfUnknownEstablishment(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	mustAppend(t, st, "other", 0, "cmd-1", event("t", `{}`))
	got, err := st.History(t.Context(), "nobody")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("History: got %d records, want none", len(got))
	}
	last, err := st.LastSequence(t.Context(), "nobody")
	if err != nil || last != 0 {
		t.Errorf("LastSequence: got %d, %v, want 0, nil", last, err)
	}
}

// LastHeader reads a header of the last record of an establishment, and says when there is none.
func TestLastHeader(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()
	seq1, err := st.Append(ctx, "chez-lou", 0, "cmd-1", []events.Envelope{event("t", `{}`)}, events.WithHeader("Publisher-Calendar", "Europe/Paris 1 2026-11-24"))
	if err != nil {
		t.Fatal(err)
	}
	if seq, value, err := st.LastHeader(ctx, "chez-lou", "Publisher-Calendar"); err != nil || seq != seq1 || value != "Europe/Paris 1 2026-11-24" {
		t.Errorf("LastHeader: got %d %q %v, want %d and the header", seq, value, err, seq1)
	}
	seq2 := mustAppend(t, st, "chez-lou", seq1, "cmd-2", event("t", `{}`))
	if seq, value, err := st.LastHeader(ctx, "chez-lou", "Publisher-Calendar"); err != nil || seq != seq2 || value != "" {
		t.Errorf("LastHeader of a record without it: got %d %q %v, want %d and none", seq, value, err, seq2)
	}
	if seq, value, err := st.LastHeader(ctx, "nobody", "Publisher-Calendar"); err != nil || seq != 0 || value != "" {
		t.Errorf("LastHeader of an establishment without records: got %d %q %v, want 0 and none", seq, value, err)
	}
	if _, _, err := st.LastHeader(ctx, "Not A Slug", "Publisher-Calendar"); err == nil {
		t.Error("LastHeader of an invalid slug: got no error")
	}
}

func TestAppendConflict(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()

	// Expecting records on a subject that has none.
	if _, err := st.Append(ctx, "chez-lou", 5, "cmd-0", []events.Envelope{event("t", `{}`)}); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("first Append expecting 5: got %v, want %v", err, events.ErrConflict)
	}
	seq := mustAppend(t, st, "chez-lou", 0, "cmd-1", event("t", `{}`))
	tests := []struct {
		name     string
		expected uint64
	}{
		{"expecting an empty subject", 0},
		{"expecting an older record", seq - 1},
		{"expecting a future record", seq + 1},
	}
	for i, tt := range tests {
		_, err := st.Append(ctx, "chez-lou", tt.expected, fmt.Sprintf("cmd-%d", i+2), []events.Envelope{event("t", `{}`)})
		if !errors.Is(err, events.ErrConflict) {
			t.Errorf("%s: got %v, want %v", tt.name, err, events.ErrConflict)
		}
		if err != nil && !strings.Contains(err.Error(), "events.chez-lou") {
			t.Errorf("%s: got error %q, want it to name the subject", tt.name, err)
		}
	}
	if all := replayAll(t, st); len(all) != 1 {
		t.Errorf("records after conflicts: got %d, want 1", len(all))
	}
}

func TestTwoWritersOneWins(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()
	mustAppend(t, st, "chez-lou", 0, "cmd-0", event("t", `{}`))

	// Both writers read the same state, then race.
	var lasts [2]uint64
	for i := range lasts {
		last, err := st.LastSequence(ctx, "chez-lou")
		if err != nil {
			t.Fatalf("LastSequence: %v", err)
		}
		lasts[i] = last
	}
	var errs [2]error
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = st.Append(ctx, "chez-lou", lasts[i], fmt.Sprintf("writer-%d", i), []events.Envelope{event("t", `{}`)})
		})
	}
	wg.Wait()

	var won, lost int
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, events.ErrConflict):
			lost++
		default:
			t.Errorf("writer %d: got %v, want nil or %v", i, err, events.ErrConflict)
		}
	}
	if won != 1 || lost != 1 {
		t.Errorf("outcome: got %d won and %d conflicted, want 1 and 1", won, lost)
	}
	if all := replayAll(t, st); len(all) != 2 {
		t.Errorf("records: got %d, want 2", len(all))
	}
}

// increment appends one counted command, re-reading the last sequence after each conflict.
func increment(ctx context.Context, st *events.Store, slug, commandID, payload string) error {
	for {
		last, err := st.LastSequence(ctx, slug)
		if err != nil {
			return err
		}
		_, err = st.Append(ctx, slug, last, commandID, []events.Envelope{event("counter.incremented", payload)})
		if errors.Is(err, events.ErrConflict) {
			continue
		}
		return err
	}
}

// checkIncrements asserts that slug holds exactly writers*perWriter increments, each once, each
// writer's in its own order.
func checkIncrements(tb testing.TB, st *events.Store, slug string, writers, perWriter int) {
	tb.Helper()
	history, err := st.History(tb.Context(), slug)
	if err != nil {
		tb.Fatalf("History: %v", err)
	}
	if got, want := len(history), writers*perWriter; got != want {
		tb.Errorf("records: got %d, want %d", got, want)
	}
	next := make([]int, writers)
	var prev uint64
	for _, r := range history {
		if r.Sequence <= prev {
			tb.Errorf("sequence %d after %d: want increasing", r.Sequence, prev)
		}
		prev = r.Sequence
		var p struct{ Writer, N int }
		if err := json.Unmarshal(r.Events[0].Payload, &p); err != nil {
			tb.Fatalf("payload %s: %v", r.Events[0].Payload, err)
		}
		if p.Writer < 0 || p.Writer >= writers {
			tb.Errorf("record %d: got writer %d, want 0 to %d", r.Sequence, p.Writer, writers-1)
			continue
		}
		if p.N != next[p.Writer] {
			tb.Errorf("record %d: writer %d: got increment %d, want %d", r.Sequence, p.Writer, p.N, next[p.Writer])
		}
		next[p.Writer] = p.N + 1
	}
}

func TestConcurrentIncrements(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	const writers, perWriter = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := range perWriter {
				id := fmt.Sprintf("w%d-n%d", w, n)
				if err := increment(t.Context(), st, "counter", id, fmt.Sprintf(`{"writer":%d,"n":%d}`, w, n)); err != nil {
					t.Errorf("increment %s: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkIncrements(t, st, "counter", writers, perWriter)
}

func TestAppendDuplicate(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()
	evs := []events.Envelope{event("t", `{"n":1}`)}

	first := mustAppend(t, st, "chez-lou", 0, "cmd-1", evs...)
	second := mustAppend(t, st, "chez-lou", first, "cmd-2", event("t", `{"n":2}`))

	// Replays of cmd-1: with the expectation it was first sent with, with the one that was
	// current before cmd-2, and with the current one.
	for _, expected := range []uint64{0, first, second} {
		seq, err := st.Append(ctx, "chez-lou", expected, "cmd-1", evs)
		if !errors.Is(err, events.ErrDuplicate) {
			t.Errorf("replay of cmd-1 expecting %d: got error %v, want %v", expected, err, events.ErrDuplicate)
		}
		if errors.Is(err, events.ErrConflict) {
			t.Errorf("replay of cmd-1 expecting %d: got %v, want no conflict", expected, err)
		}
		if seq != first {
			t.Errorf("replay of cmd-1 expecting %d: got sequence %d, want %d", expected, seq, first)
		}
	}
	history, err := st.History(ctx, "chez-lou")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(history) != 2 {
		t.Errorf("records: got %d, want 2", len(history))
	}
}

// A record larger than the connection's maximum payload is refused before it is sent.
func TestAppendTooLarge(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	st := openStore(t, nc, events.Config{})
	big := `"` + strings.Repeat("x", int(nc.MaxPayload())) + `"`
	seq, err := st.Append(t.Context(), "chez-lou", 0, "cmd-big", []events.Envelope{event("t", big)})
	if !errors.Is(err, events.ErrRecordTooLarge) || seq != 0 {
		t.Errorf("oversized record: got %d, %v, want ErrRecordTooLarge", seq, err)
	}
	if got := replayAll(t, st); len(got) != 0 {
		t.Errorf("got %d records, want none", len(got))
	}
	mustAppend(t, st, "chez-lou", 0, "cmd-small", event("t", `{"n":1}`))
}

func TestEstablishmentsAreIndependent(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := t.Context()

	a1 := mustAppend(t, st, "alpha", 0, "a-1", event("t", `{}`))
	b1 := mustAppend(t, st, "beta", 0, "b-1", event("t", `{}`))
	// alpha's expectation is still right although the stream moved on.
	a2 := mustAppend(t, st, "alpha", a1, "a-2", event("t", `{}`))
	mustAppend(t, st, "beta", b1, "b-2", event("t", `{}`))
	mustAppend(t, st, "gamma", 0, "g-1", event("t", `{}`))

	for slug, want := range map[string]uint64{"alpha": a2, "beta": a2 + 1, "gamma": a2 + 2} {
		got, err := st.LastSequence(ctx, slug)
		if err != nil {
			t.Fatalf("LastSequence(%s): %v", slug, err)
		}
		if got != want {
			t.Errorf("LastSequence(%s): got %d, want %d", slug, got, want)
		}
	}
	for slug, want := range map[string]int{"alpha": 2, "beta": 2, "gamma": 1} {
		h, err := st.History(ctx, slug)
		if err != nil {
			t.Fatalf("History(%s): %v", slug, err)
		}
		if len(h) != want {
			t.Errorf("History(%s): got %d records, want %d", slug, len(h), want)
		}
		for _, r := range h {
			if r.Establishment != slug {
				t.Errorf("History(%s): got a record of %q", slug, r.Establishment)
			}
		}
	}
	slugs, err := st.Slugs(ctx)
	if err != nil {
		t.Fatalf("Slugs: %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, slugs); diff != "" {
		t.Errorf("Slugs mismatch (-want +got):\n%s", diff)
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ok := []events.Envelope{event("t", `{}`)}
	tests := []struct {
		name      string
		slug      string
		commandID string
		events    []events.Envelope
		want      error
	}{
		{"empty slug", "", "c", ok, events.ErrInvalidSlug},
		{"slug with dot", "chez.lou", "c", ok, events.ErrInvalidSlug},
		{"slug wildcard", "*", "c", ok, events.ErrInvalidSlug},
		{"slug with star", "chez*", "c", ok, events.ErrInvalidSlug},
		{"slug tail wildcard", ">", "c", ok, events.ErrInvalidSlug},
		{"slug with space", "chez lou", "c", ok, events.ErrInvalidSlug},
		{"slug with tab", "chez\tlou", "c", ok, events.ErrInvalidSlug},
		{"slug with line break", "chez\r\nlou", "c", ok, events.ErrInvalidSlug},
		{"empty command id", "chez-lou", "", ok, events.ErrInvalidRecord},
		{"command id too long", "chez-lou", strings.Repeat("c", events.MaxCommandIDLen+1), ok, events.ErrInvalidRecord},
		{"command id with a line break", "chez-lou", "c\r\nNats-Msg-Id: x", ok, events.ErrInvalidRecord},
		{"no events", "chez-lou", "c", nil, events.ErrInvalidRecord},
		{"event without type", "chez-lou", "c", []events.Envelope{event("", `{}`)}, events.ErrInvalidRecord},
		{"event without time", "chez-lou", "c", []events.Envelope{{Type: "t", SchemaVersion: 1, Payload: json.RawMessage(`{}`)}}, events.ErrInvalidRecord},
		{"event without schema version", "chez-lou", "c", []events.Envelope{{Type: "t", Time: testTime, Payload: json.RawMessage(`{}`)}}, events.ErrInvalidRecord},
		{"event with a broken payload", "chez-lou", "c", []events.Envelope{event("t", `{`)}, events.ErrInvalidRecord},
		{"event of another establishment", "chez-lou", "c", []events.Envelope{{Type: "t", Establishment: "other", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`{}`)}}, events.ErrInvalidRecord},
	}
	for _, tt := range tests {
		seq, err := st.Append(t.Context(), tt.slug, 0, tt.commandID, tt.events)
		if !errors.Is(err, tt.want) || seq != 0 {
			t.Errorf("%s: got %d, %v, want 0, %v", tt.name, seq, err, tt.want)
		}
	}
	if all := replayAll(t, st); len(all) != 0 {
		t.Errorf("records after rejected appends: got %d, want none", len(all))
	}
	for _, slug := range []string{"", "a.b", "a b", ">"} {
		if _, err := st.History(t.Context(), slug); !errors.Is(err, events.ErrInvalidSlug) {
			t.Errorf("History(%q): got %v, want %v", slug, err, events.ErrInvalidSlug)
		}
		if _, err := st.LastSequence(t.Context(), slug); !errors.Is(err, events.ErrInvalidSlug) {
			t.Errorf("LastSequence(%q): got %v, want %v", slug, err, events.ErrInvalidSlug)
		}
	}
}

// TestStorageFullMarksJetStreamsRefusals: JetStream's refusals for lack of storage are marked
// ErrStorageFull, wrapped or not; any other error is left as it is.
func TestStorageFullMarksJetStreamsRefusals(t *testing.T) {
	for _, code := range []jetstream.ErrorCode{10047, 10002, 10023} {
		err := fmt.Errorf("put: %w", &jetstream.APIError{ErrorCode: code, Description: "insufficient resources"})
		if got := events.StorageFull(err); !errors.Is(got, events.ErrStorageFull) || !errors.Is(got, err) {
			t.Errorf("code %d: got %v, want it marked, the error kept", code, got)
		}
	}
	other := &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}
	if got := events.StorageFull(other); got != error(other) {
		t.Errorf("another refusal: got %v, want it as it is", got)
	}
	if events.StorageFull(nil) != nil {
		t.Error("nil: not nil")
	}
}
