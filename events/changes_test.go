package events_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// publishSignals stores the signals in order and returns their stream sequences.
func publishSignals(t *testing.T, p *events.Signals, sigs ...events.Signal) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, s := range sigs {
		if err := p.Publish(t.Context(), s); err != nil {
			t.Fatalf("Publish(%+v): %v", s, err)
		}
		last, err := p.LastSequence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, last)
	}
	return seqs
}

func sig(slug string, rev int64, resources ...string) events.Signal {
	return events.Signal{Establishment: slug, Revision: rev, Resources: resources, Time: signalTime}
}

func TestChangesMergesEachEstablishmentOncePerPage(t *testing.T) {
	t.Parallel()
	p, err := events.OpenSignals(t.Context(), natstest.Connect(t, natstest.Start(t)), 1)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := p.Changes(t.Context(), events.ChangesQuery{})
	if err != nil || empty.Changes == nil || len(empty.Changes) != 0 || empty.Next != 0 {
		t.Fatalf("Changes of an empty stream = %+v, %v; want nothing at 0", empty, err)
	}
	draft := sig("b", 9, "menus")
	draft.Unserved, draft.Transition = true, events.TransitionUnserved
	seqs := publishSignals(t, p,
		sig("a", 3, "menus", "hours"),
		sig("b", 4, "establishment"),
		sig("a", 5, "menus/carte"),
		draft,
		sig("c", 6, "hours"),
	)
	page, err := p.Changes(t.Context(), events.ChangesQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []events.Change{
		{Establishment: "a", Revision: 5, Resources: []string{"hours", "menus", "menus/carte"}, Served: true},
		{Establishment: "b", Revision: 9, Resources: []string{"establishment", "menus"}, Served: false},
		{Establishment: "c", Revision: 6, Resources: []string{"hours"}, Served: true},
	}
	if diff := cmp.Diff(want, page.Changes, ignoreReadAt); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	// Each entry says where it was read: its newest signal.
	for i, seq := range []uint64{seqs[2], seqs[3], seqs[4]} {
		if c := page.Changes[i]; c.Seq != seq || c.Synced || c.At.IsZero() {
			t.Errorf("entry %s read at %d, synced %v, at %v; want %d, false and the signal's time", c.Establishment, c.Seq, c.Synced, c.At, seq)
		}
	}
	if page.Next != seqs[4] || page.Last != seqs[4] {
		t.Errorf("Next, Last = %d, %d; want %d, %d", page.Next, page.Last, seqs[4], seqs[4])
	}

	// A limit ends the page before the signal that would add one establishment too many, even
	// when later signals are of establishments it lists: the next page goes on from there.
	first, err := p.Changes(t.Context(), events.ChangesQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Changes) != 1 || first.Changes[0].Revision != 3 || first.Next != seqs[0] {
		t.Fatalf("page of 1 = %+v; want a at 3, ending at %d", first, seqs[0])
	}
	second, err := p.Changes(t.Context(), events.ChangesQuery{After: first.Next, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Changes) != 1 || second.Changes[0].Establishment != "b" || second.Next != seqs[1] {
		t.Fatalf("second page of 1 = %+v; want b, ending at %d", second, seqs[1])
	}

	// Until, Keep and Skip.
	part, err := p.Changes(t.Context(), events.ChangesQuery{
		Until: seqs[3],
		Keep:  func(slug string) bool { return slug != "b" },
		Skip:  func(seq uint64, _ events.Signal) bool { return seq == seqs[2] },
	})
	if err != nil {
		t.Fatal(err)
	}
	want = []events.Change{{Establishment: "a", Revision: 3, Resources: []string{"hours", "menus"}, Served: true}}
	if diff := cmp.Diff(want, part.Changes, ignoreReadAt); diff != "" || part.Next != seqs[3] {
		t.Errorf("Changes with Until, Keep and Skip, Next %d (-want +got):\n%s", part.Next, diff)
	}

	// A byte bound ends a page as a limit does, but never before its first entry.
	small, err := p.Changes(t.Context(), events.ChangesQuery{MaxBytes: 1})
	if err != nil || len(small.Changes) != 1 || small.Next != seqs[0] {
		t.Errorf("page of 1 byte = %+v, %v; want a alone", small, err)
	}
}

func TestChangesAfterWhatTheStreamKeepsAreGone(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	p, err := events.OpenSignals(t.Context(), nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	seqs := publishSignals(t, p, sig("a", 1, "hours"), sig("b", 2, "hours"), sig("c", 3, "hours"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(t.Context(), events.SignalStreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(t.Context(), jetstream.WithPurgeSequence(seqs[1])); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{0, seqs[0] - 1, seqs[2] + 1} {
		if _, err := p.Changes(t.Context(), events.ChangesQuery{After: after}); !errors.Is(err, events.ErrChangesGone) {
			t.Errorf("Changes after %d = %v; want ErrChangesGone", after, err)
		}
	}
	page, err := p.Changes(t.Context(), events.ChangesQuery{After: seqs[0]})
	if err != nil || len(page.Changes) != 2 {
		t.Errorf("Changes after the last purged = %+v, %v; want b and c", page, err)
	}
}

func TestOpenSignalsKeepsTheRetentionSet(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Start(t))
	if _, err := events.OpenSignalsFor(t.Context(), nc, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := events.OpenSignals(t.Context(), nc, 1); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(t.Context(), events.SignalStreamName)
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.CachedInfo().Config.MaxAge; got != time.Hour {
		t.Errorf("retention after OpenSignals = %v; want the hour set before", got)
	}
	if _, err := events.OpenSignalsFor(t.Context(), nc, 1, -time.Second); err == nil {
		t.Error("OpenSignalsFor with a negative retention succeeded")
	}
	if _, err := events.BindSignals(t.Context(), nc); err != nil {
		t.Errorf("BindSignals: %v", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []events.Cursor{
		{},
		{Signal: 42},
		{Sync: true, Generation: 3, Bundle: 1 << 40, Signal: 7},
		{Signal: 9, Generation: 2, SkipStoredUpTo: 100, SkipUntil: 12},
	} {
		got, err := events.ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	for _, bad := range []string{"", "x", "Yzku", events.Cursor{Signal: 1}.String() + "A", "YzEuMS4wLjAuMC4wLjA"} {
		if _, err := events.ParseCursor(bad); !errors.Is(err, events.ErrInvalidCursor) {
			t.Errorf("ParseCursor(%q) = %v; want ErrInvalidCursor", bad, err)
		}
	}
}

func TestCursorSkipsWhatTheSyncGave(t *testing.T) {
	t.Parallel()
	c := events.Cursor{Signal: 5, SkipStoredUpTo: 100, SkipUntil: 10}
	for _, tt := range []struct {
		seq, stored uint64
		skip        bool
	}{{6, 100, true}, {10, 1, true}, {6, 101, false}, {11, 50, false}, {6, 0, false}} {
		s := sig("a", 1, "hours")
		s.Stored = tt.stored
		if got := c.Skips(tt.seq, s); got != tt.skip {
			t.Errorf("Skips(seq %d, stored %d) = %v; want %v", tt.seq, tt.stored, got, tt.skip)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(events.Cursor{Sync: true, Generation: 1, Bundle: 5, Signal: 2}.String())
	f.Add(events.Cursor{Signal: 9, SkipStoredUpTo: 3, SkipUntil: 4}.String())
	f.Add("YzEuMC4wLjAuMC4wLjA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := events.ParseCursor(s)
		if err != nil {
			if !errors.Is(err, events.ErrInvalidCursor) {
				t.Fatalf("ParseCursor(%q) = %v; want ErrInvalidCursor", s, err)
			}
			return
		}
		again, err := events.ParseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("cursor %+v from %q does not round-trip: %+v, %v", c, s, again, err)
		}
	})
}

// ignoreReadAt leaves out of a comparison where an entry was read.
var ignoreReadAt = cmpopts.IgnoreFields(events.Change{}, "Seq", "Synced", "At")

func TestMergeResources(t *testing.T) {
	t.Parallel()
	got := events.MergeResources(
		[]string{"menus/plat-du-jour", "jsonld", "hours"},
		[]string{"menus", "menus/carte", "hours"},
		nil,
		[]string{"establishment", "menus/carte", "jsonld", "other"},
	)
	want := []string{"establishment", "hours", "menus", "menus/carte", "menus/plat-du-jour", "jsonld", "other"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeResources (-want +got):\n%s", diff)
	}
	if got := events.MergeResources(nil); got == nil || len(got) != 0 {
		t.Errorf("MergeResources(nil) = %#v, want an empty list, not nil", got)
	}
}

// BenchmarkChangesTail reads the last page of a stream of signals of 20,000 establishments, as a
// follower of the changes feed does at every poll: the server's work for the read grows with
// what the read's filter asks it to match in the blocks it reads.
func BenchmarkChangesTail(b *testing.B) {
	nc := natstest.Connect(b, natstest.Start(b))
	p, err := events.OpenSignals(b.Context(), nc, 1)
	if err != nil {
		b.Fatal(err)
	}
	const establishments = 20_000
	for i := range establishments {
		if err := p.Publish(b.Context(), sig(fmt.Sprintf("establishment-%d", i), 1, "menus")); err != nil {
			b.Fatal(err)
		}
	}
	last, err := p.LastSequence(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		page, err := p.Changes(b.Context(), events.ChangesQuery{After: last - 50})
		if err != nil || len(page.Changes) != 50 {
			b.Fatalf("Changes = %d entries, %v; want 50", len(page.Changes), err)
		}
	}
}
