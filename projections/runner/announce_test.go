package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
)

// announcer is an AnnouncedNotifier that keeps what it is told, fails while down, and fails its
// first failures calls.
type announcer struct {
	recorder
	down     atomic.Bool
	failures atomic.Int32
	calls    atomic.Int32
}

func (a *announcer) Changed(ctx context.Context, c Change) error {
	a.calls.Add(1)
	if a.down.Load() || a.failures.Add(-1) >= 0 {
		return errors.New("nats: no responders available for request")
	}
	return a.recorder.Changed(ctx, c)
}

func (a *announcer) Announced(_ context.Context, slug string) (Announcement, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return lastOf(a.changes)[slug], nil
}

// lastOf returns the last announcement of each establishment of changes, a signal stream would
// keep: the last of its highest revision.
func lastOf(changes []Change) map[string]Announcement {
	last := map[string]Announcement{}
	for _, c := range changes {
		if c.Revision >= last[c.Slug].Revision {
			last[c.Slug] = Announcement{Revision: c.Revision, Unserved: c.Unserved}
		}
	}
	return last
}

// A stored revision is always announced: a failed announcement is retried, and one lost in a
// stop between storing and announcing is made at the next start, once.
func TestProjectorAnnouncesEveryStoredRevision(t *testing.T) {
	n := newNATSEnv(t)

	// Two failures, then the announcement.
	flaky := &announcer{}
	flaky.failures.Store(2)
	p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: flaky, Announcements: flaky})
	seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
	p.waitFor(t, seq)
	first := flaky.take()
	if len(first) != 1 || first[0].Revision != int64(seq-1) || flaky.calls.Load() != 3 {
		t.Fatalf("after two failures: got %+v in %d calls, want revision %d announced on the third", first, flaky.calls.Load(), seq-1)
	}
	_ = p.stop(t)

	// The notifier is down: the projector stores the next revision, cannot announce it, stops.
	down := &announcer{}
	down.recorder.changes = first // what the notifier announced before
	down.down.Store(true)
	p = startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: down, Announcements: down})
	p.waitFor(t, seq)
	url := "https://cdn.example.fr/carte-2.pdf"
	next := n.append(t, "cave-a-vins", domain.MasterMenuChanged{URL: &url})
	deadline := time.Now().Add(testTimeout)
	for b, _, _ := entry(t, n.kv, "cave-a-vins"); b.Revision != int64(next); b, _, _ = entry(t, n.kv, "cave-a-vins") {
		if time.Now().After(deadline) {
			t.Fatalf("revision %d never stored", next)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = p.stop(t)
	if got := down.take(); len(got) != 1 {
		t.Fatalf("announced while down: %+v", got[1:])
	}

	// The next start announces the stored revision with every resource, since what changed is
	// unknown; the start after that has nothing to announce. Alike with a notifier that tells
	// every last announcement in one read, which the replay then asks nothing one by one.
	up := &announcer{}
	all := &allAnnouncer{announcer: &announcer{}}
	for _, tc := range []struct {
		notifier interface {
			AnnouncedNotifier
			take() []Change
			lastStored(slug string) uint64
			set([]Change)
		}
		all AllAnnouncements
	}{{up, nil}, {all, all}} {
		notifier := tc.notifier
		notifier.set([]Change{first[0]})
		for range 2 {
			p = startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: notifier, Announcements: notifier, AllAnnouncements: tc.all})
			p.waitFor(t, next)
			_ = p.stop(t)
		}
		want := []Change{first[0], {Slug: "cave-a-vins", Revision: int64(next), Resources: first[0].Resources, Unserved: true}}
		if diff := cmp.Diff(want, notifier.take()); diff != "" {
			t.Errorf("%T: announcements over two starts (-want +got):\n%s", notifier, diff)
		}
		if _, _, kvRev := entry(t, n.kv, "cave-a-vins"); notifier.lastStored("cave-a-vins") != kvRev {
			t.Errorf("%T: the revision announced again says it was stored at %d, the bucket holds it at %d", notifier, notifier.lastStored("cave-a-vins"), kvRev)
		}
	}
	if asked := all.asked.Load(); asked != 0 {
		t.Errorf("the replays asked the last announcement of one establishment %d times, want none", asked)
	}
}

// A transition lost in a stop between storing the bundle and announcing it is announced at the
// next start, once, though the revision did not rise, with the bucket's sequence of the write:
// whether the start replays the whole log (reading no bundle) or resumes from its checkpoint.
func TestProjectorAnnouncesALostTransition(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(map[bool]string{false: "replayed", true: "resumed"}[resume], func(t *testing.T) {
			n := newNATSEnv(t)
			const demo = "chez-marcel"
			kept := n.freshState(t)
			state := func() jetstream.KeyValue {
				if resume {
					return kept
				}
				return n.freshState(t)
			}
			seq := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
			rec := &announcer{}
			p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state(), Notifier: rec, Announcements: rec})
			p.waitFor(t, seq)
			_ = p.stop(t)
			first := rec.take()

			down := &announcer{}
			down.set(first)
			down.down.Store(true)
			p = startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state(), Notifier: down, Announcements: down})
			p.waitFor(t, seq)
			disabled := n.append(t, demo, domain.PublicAPIDisabled{})
			deadline := time.Now().Add(testTimeout)
			for b, _, _ := entry(t, n.kv, demo); b.APIEnabled; b, _, _ = entry(t, n.kv, demo) {
				if time.Now().After(deadline) {
					t.Fatal("the disabled API was never stored")
				}
				time.Sleep(5 * time.Millisecond)
			}
			_ = p.stop(t)

			up := &announcer{}
			up.set(first)
			log := &countingLog{Store: n.store}
			counted := &countingBucket{KeyValue: n.kv.KeyValue}
			for range 2 {
				p = startProjectorWith(t, Config{Store: log, KV: NewBundles(n.js, counted), State: state(), Notifier: up, Announcements: up})
				p.waitFor(t, disabled)
				_ = p.stop(t)
			}
			if replays := log.replays.Load(); resume != (replays == 0) {
				t.Errorf("%d replays of the whole log, want them only when not resuming", replays)
			}
			if gets := counted.gets.Load(); !resume && gets != 0 {
				t.Errorf("the replays read %d bundles, want none: the sequence of the write comes with its fingerprint", gets)
			}
			last := first[len(first)-1]
			want := append(first, Change{Slug: demo, Revision: last.Revision, Resources: allDemoResources(), Unserved: true, Transition: projections.TransitionUnserved})
			if diff := cmp.Diff(want, up.take()); diff != "" {
				t.Errorf("announcements over two starts (-want +got):\n%s", diff)
			}
			if _, _, kvRev := entry(t, n.kv, demo); up.lastStored(demo) != kvRev {
				t.Errorf("the transition announced again says it was stored at %d, the bucket holds it at %d", up.lastStored(demo), kvRev)
			}
		})
	}
}

// allAnnouncer is an announcer that also tells every last announcement in one read, and counts
// the questions it is asked one establishment at a time.
type allAnnouncer struct {
	*announcer
	asked atomic.Int32
}

func (a *allAnnouncer) Announced(ctx context.Context, slug string) (Announcement, error) {
	a.asked.Add(1)
	return a.announcer.Announced(ctx, slug)
}

func (a *allAnnouncer) AllAnnounced(_ context.Context, fn func(slug string, a Announcement)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for slug, last := range lastOf(a.changes) {
		fn(slug, last)
	}
	fn("etablissement-inconnu", Announcement{Revision: 1 << 40}) // not of the log: nothing to align it with
	return nil
}

func (a *announcer) set(changes []Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.changes = changes
}
