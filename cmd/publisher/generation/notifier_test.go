package generation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections/runner"
)

// SignalNotifier publishes each change as the signal of its establishment, served or not, its
// transition and the bucket's sequence of its write included; a change told again is stored
// once; and what it announced last of each establishment, one at a time or all at once, says
// whether it was unserved.
func TestSignalNotifierCarriesTransitions(t *testing.T) {
	ctx := t.Context()
	signals, err := events.OpenSignals(ctx, natstest.Connect(t, natstest.Start(t)), 1)
	if err != nil {
		t.Fatal(err)
	}
	var counted int
	n := SignalNotifier{Signals: signals, Count: func() { counted++ }}
	all := []string{"establishment", "hours", "menus"}
	changes := []runner.Change{
		{Slug: "chez-marcel", Revision: 5, Resources: all, Stored: 10},
		{Slug: "chez-marcel", Revision: 5, Resources: all, Unserved: true, Transition: events.TransitionUnserved, Stored: 11},
		{Slug: "chez-marcel", Revision: 5, Resources: all, Unserved: true, Transition: events.TransitionUnserved, Stored: 11},
		{Slug: "la-cave", Revision: 7, Resources: []string{"establishment"}, Unserved: true, Stored: 12},
	}
	for _, c := range changes {
		if err := n.Changed(ctx, c); err != nil {
			t.Fatalf("Changed(%+v): %v", c, err)
		}
	}
	if counted != len(changes) {
		t.Errorf("counted %d changes, want %d", counted, len(changes))
	}
	if seq, err := signals.LastSequence(ctx); err != nil || seq != 3 {
		t.Errorf("signals stored: %d, %v; want 3, the transition told twice stored once", seq, err)
	}
	last, err := signals.Last(ctx, "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}
	want := events.Signal{Establishment: "chez-marcel", Revision: 5, Resources: all, Unserved: true, Transition: events.TransitionUnserved, Stored: 11}
	if diff := cmp.Diff(want, last, cmpopts.IgnoreFields(events.Signal{}, "Time")); diff != "" {
		t.Errorf("last signal (-want +got):\n%s", diff)
	}
	wantLast := map[string]runner.Announcement{"chez-marcel": {Revision: 5, Unserved: true}, "la-cave": {Revision: 7, Unserved: true}}
	for slug, want := range wantLast {
		if got, err := n.Announced(ctx, slug); err != nil || got != want {
			t.Errorf("Announced(%s): %+v, %v; want %+v", slug, got, err, want)
		}
	}
	gotLast := map[string]runner.Announcement{}
	if err := n.AllAnnounced(ctx, func(slug string, a runner.Announcement) { gotLast[slug] = a }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLast, gotLast); diff != "" {
		t.Errorf("AllAnnounced (-want +got):\n%s", diff)
	}
}
