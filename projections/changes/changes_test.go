package changes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections/changes"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
)

// env is a real NATS server with the change signals and the bucket of bundles, written as the
// projector writes them: a bundle, then its signal.
type env struct {
	t       *testing.T
	nc      *nats.Conn
	signals *events.Signals
	kv      *runner.Bundles
	js      jetstream.JetStream
	gen     int
	feed    *changes.Feed
}

func newEnv(t *testing.T) *env {
	nc := natstest.Connect(t, natstest.Start(t))
	signals, err := events.OpenSignals(t.Context(), nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := runner.OpenBucket(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, nc: nc, signals: signals, kv: kv, js: js, gen: 1}
	e.feed, err = changes.New(changes.Config{Conn: nc, Signals: signals, Generation: func() int { return e.gen }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.feed.Close)
	return e
}

// store writes the bundle of slug at revision, served or not, and announces it unless quiet.
func (e *env) store(slug string, revision int64, served, quiet bool, resources ...string) {
	e.t.Helper()
	e.write(slug, revision, served, quiet, "", resources)
}

// flip writes the bundle of slug served or not at the same revision, and announces the transition.
func (e *env) flip(slug string, revision int64, served bool, resources ...string) {
	e.t.Helper()
	transition := events.TransitionServed
	if !served {
		transition = events.TransitionUnserved
	}
	e.write(slug, revision, served, false, transition, resources)
}

func (e *env) write(slug string, revision int64, served, quiet bool, transition string, resources []string) {
	e.t.Helper()
	b := dockey.Bundle{Slug: slug, Revision: revision, Status: dockey.StatusActive, APIEnabled: served}
	if served {
		b.KeyHash = "0000000000000000000000000000000000000000000000000000000000000000"
	}
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		e.t.Fatal(err)
	}
	stored, err := e.kv.Put(e.t.Context(), dockey.Key(slug), value)
	if err != nil {
		e.t.Fatal(err)
	}
	if quiet {
		return
	}
	s := events.Signal{Establishment: slug, Revision: revision, Resources: resources, Unserved: !served, Transition: transition, Stored: stored}
	if err := e.signals.Publish(e.t.Context(), s); err != nil {
		e.t.Fatal(err)
	}
}

// client applies pages as a cache does, and fails the test if a revision goes back.
type client struct {
	t     *testing.T
	state map[string]events.Change
}

func (c *client) apply(p changes.Page) {
	c.t.Helper()
	seen := map[string]bool{}
	for _, ch := range p.Changes {
		if seen[ch.Establishment] {
			c.t.Errorf("%s twice in one page", ch.Establishment)
		}
		seen[ch.Establishment] = true
		if had, ok := c.state[ch.Establishment]; ok && ch.Revision < had.Revision {
			c.t.Errorf("%s went back from %d to %d", ch.Establishment, had.Revision, ch.Revision)
		}
		c.state[ch.Establishment] = ch
	}
}

func (e *env) read(after string, limit int) changes.Page {
	e.t.Helper()
	p, err := e.feed.Read(e.t.Context(), after, limit, 0)
	if err != nil {
		e.t.Fatalf("Read(%q): %v", after, err)
	}
	return p
}

func revisions(state map[string]events.Change) map[string]int64 {
	out := map[string]int64{}
	for slug, c := range state {
		out[slug] = c.Revision
	}
	return out
}

// A first sync gives every establishment's state, paged; a change made during it is given once
// by the sync, and not again, older, by the changes that follow; later changes follow it.
func TestFirstSyncThenChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store("a", 3, true, false, "establishment", "hours", "menus")
	e.store("b", 4, false, false, "establishment", "hours", "menus")
	e.store("c", 5, true, false, "establishment", "hours", "menus")
	c := &client{t: t, state: map[string]events.Change{}}

	first := e.read("", 2)
	c.apply(first)
	if len(first.Changes) != 2 {
		t.Fatalf("first page: %+v, want 2 entries", first.Changes)
	}
	want := events.Change{Establishment: "a", Revision: 3, Resources: []string{"establishment", "hours", "menus", "jsonld"}, Served: true}
	if diff := cmp.Diff(want, first.Changes[0], ignoreReadAt); diff != "" {
		t.Errorf("first entry (-want +got):\n%s", diff)
	}
	if c := first.Changes[0]; !c.Synced || c.Seq == 0 || c.At.IsZero() {
		t.Errorf("first entry read at %d, synced %v, at %v; want its bundle's sequence and time", c.Seq, c.Synced, c.At)
	}
	if first.Changes[1].Served {
		t.Errorf("b, its API disabled, is served: %+v", first.Changes[1])
	}
	// Changes during the sync: the sync reads the newest bundles at the bucket's end, and the
	// signals of what it read are not given again after it: a@7 would go back from a@9, on pages
	// of one establishment.
	e.store("a", 7, true, false, "hours")
	e.store("b", 6, false, false, "menus")
	e.store("a", 9, true, false, "hours")
	next := first.Next
	for range 10 {
		p := e.read(next, 1)
		c.apply(p)
		if next = p.Next; len(p.Changes) == 0 {
			break
		}
	}
	if diff := cmp.Diff(map[string]int64{"a": 9, "b": 6, "c": 5}, revisions(c.state)); diff != "" {
		t.Errorf("after the sync (-want +got):\n%s", diff)
	}
	// Later changes, an establishment going unserved among them.
	e.store("b", 11, true, false, "menus")
	e.flip("c", 5, false, "establishment", "hours", "menus")
	p := e.read(next, 1000)
	c.apply(p)
	want2 := []events.Change{
		{Establishment: "b", Revision: 11, Resources: []string{"menus"}, Served: true},
		{Establishment: "c", Revision: 5, Resources: []string{"establishment", "hours", "menus"}, Served: false},
	}
	if diff := cmp.Diff(want2, p.Changes, ignoreReadAt); diff != "" {
		t.Errorf("changes after the sync (-want +got):\n%s", diff)
	}
	// The cursor is plain data: it goes on from the same place with another Feed.
	again := e.read(p.Next, 1000)
	if len(again.Changes) != 0 || again.Next != p.Next {
		t.Errorf("nothing new: got %+v", again)
	}
}

// A page that would be empty waits for the next change, and answers with it.
func TestWaitAnswersOnTheNextChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store("a", 1, true, false, "hours")
	sync := e.read("", 1000)
	live := e.read(sync.Next, 1000)
	got := make(chan changes.Page, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() {
		p, err := e.feed.Read(ctx, live.Next, 1000, changes.MaxWait)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	// Changes until the waiting read answers: it may start waiting after the first.
	for rev := int64(2); ; rev++ {
		e.store("a", rev, true, false, "menus")
		select {
		case p := <-got:
			if len(p.Changes) != 1 || p.Changes[0].Establishment != "a" {
				t.Errorf("waited page: %+v, want a change of a", p)
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the waiting read never answered")
		}
	}
}

// A cursor whose signals are no longer kept, or a sync of a bucket replaced, is gone; a cursor
// that is not one is invalid.
func TestGoneAndInvalidCursors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store("a", 1, true, false, "hours")
	e.store("b", 2, true, false, "hours")
	sync := e.read("", 1)
	e.gen = 2
	if _, err := e.feed.Read(t.Context(), sync.Next, 10, 0); !errors.Is(err, changes.ErrGone) {
		t.Errorf("sync of a replaced generation: %v, want ErrGone", err)
	}
	old := events.Cursor{Signal: 0}.String()
	stream, err := e.js.Stream(t.Context(), events.SignalStreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.feed.Read(t.Context(), old, 10, 0); !errors.Is(err, changes.ErrGone) {
		t.Errorf("purged signals: %v, want ErrGone", err)
	}
	if _, err := e.feed.Read(t.Context(), "not-a-cursor", 10, 0); !errors.Is(err, events.ErrInvalidCursor) {
		t.Errorf("not a cursor: %v, want ErrInvalidCursor", err)
	}
}

// A bundle written without a signal (a new key) is in the sync, and the signals that came before
// the sync are not given again once it ends.
func TestSyncSkipsWhatItGave(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store("a", 1, true, false, "hours")
	e.store("a", 2, true, false, "menus")
	e.store("a", 2, true, true) // an access change: no signal
	c := &client{t: t, state: map[string]events.Change{}}
	sync := e.read("", 1000)
	c.apply(sync)
	live := e.read(sync.Next, 1000)
	c.apply(live)
	if len(live.Changes) != 0 || c.state["a"].Revision != 2 {
		t.Errorf("after the sync: %+v; state %+v", live.Changes, c.state)
	}
}

// Past MaxWaiters, a read whose page is empty answers at once instead of waiting; the one
// waiting still answers with the next change.
func TestWaitersAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	feed, err := changes.New(changes.Config{Conn: e.nc, Signals: e.signals, Generation: func() int { return 1 }, MaxWaiters: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(feed.Close)
	e.store("a", 1, true, false, "hours")
	live := e.read(e.read("", 1000).Next, 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got := make(chan changes.Page, 1)
	go func() {
		p, err := feed.Read(ctx, live.Next, 1000, changes.MaxWait)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	for feed.Waiting() != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("the first read never waited")
		case <-time.After(10 * time.Millisecond):
		}
	}
	p, err := feed.Read(ctx, live.Next, 1000, changes.MaxWait)
	if err != nil || len(p.Changes) != 0 || p.Next != live.Next || ctx.Err() != nil {
		t.Fatalf("a read past the bound: %+v, %v (deadline: %v); want its empty page at once", p, err, ctx.Err())
	}
	e.store("a", 2, true, false, "menus")
	select {
	case p := <-got:
		if len(p.Changes) != 1 || p.Changes[0].Revision != 2 {
			t.Errorf("the waiting read: %+v, want a@2", p)
		}
	case <-ctx.Done():
		t.Fatal("the waiting read never answered")
	}
}

// Before a projector made the bucket of bundles (an admin node started first), a first sync is
// empty, and the changes go on from there.
func TestFirstSyncBeforeTheBucket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gen = 3 // a generation whose bucket nobody made
	sync := e.read("", 1000)
	if len(sync.Changes) != 0 {
		t.Fatalf("first sync without a bucket: %+v, want none", sync.Changes)
	}
	e.store("a", 1, true, false, "hours")
	live := e.read(sync.Next, 1000)
	if len(live.Changes) != 1 || live.Changes[0].Establishment != "a" {
		t.Errorf("after the empty sync: %+v, want the change of a", live.Changes)
	}
}

// ignoreReadAt leaves out of a comparison where an entry was read.
var ignoreReadAt = cmpopts.IgnoreFields(events.Change{}, "Seq", "Synced", "At")
