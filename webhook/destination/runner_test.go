package destination_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
	"github.com/opencarte/publisher/webhook/destination"
)

// sink is a destination's broker in memory: the events it took, and whether it refuses.
type sink struct {
	mu      sync.Mutex
	got     []destination.Event
	refuse  error
	opened  int
	publish int
}

func (s *sink) open(context.Context, destination.Spec, destination.Secrets) (destination.Sink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened++
	return s, nil
}

func (s *sink) Publish(_ context.Context, evs []destination.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish++
	if s.refuse != nil {
		return s.refuse
	}
	s.got = append(s.got, evs...)
	return nil
}

func (s *sink) Close() error { return nil }

func (s *sink) setRefuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = err
}

// latest returns the newest revision each establishment's events reached, and fails the test
// when an establishment's revisions go back.
func (s *sink) latest(t *testing.T) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, e := range s.got {
		if e.Data.Revision < out[e.Subject] {
			t.Errorf("%s: revision %d after %d", e.Subject, e.Data.Revision, out[e.Subject])
		}
		out[e.Subject] = max(out[e.Subject], e.Data.Revision)
	}
	return out
}

// env is a NATS server with the change signals, the destinations' store and a runner over a
// feed of the signals alone (a first sync gives nothing: the service's feed is tested with it).
type env struct {
	t       *testing.T
	js      jetstream.JetStream
	signals *events.Signals
	store   *destination.Store
	sink    *sink
	gone    func(after string) bool // when set, the feed says these positions are gone
	syncs   atomic.Int64            // first syncs started
}

func newEnv(t *testing.T) *env {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	signals, err := events.OpenSignals(t.Context(), nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := webhook.ParseMasterKeys([]byte(webhook.NewMasterKey()))
	if err != nil {
		t.Fatal(err)
	}
	store, err := destination.OpenStore(t.Context(), js, keys, signals, 1)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, js: js, signals: signals, store: store, sink: &sink{}}
}

func (e *env) feed(ctx context.Context, after string, limit int, _ time.Duration) ([]events.Change, string, error) {
	if e.gone != nil && e.gone(after) {
		return nil, after, fmt.Errorf("feed: %w", events.ErrChangesGone)
	}
	if after == "" {
		// A sync is counted once its position is taken: a signal published once a test saw it
		// counted lies after that position, and is read.
		last, err := e.signals.LastSequence(ctx)
		e.syncs.Add(1)
		return []events.Change{}, events.Cursor{Signal: last}.String(), err
	}
	cur, err := events.ParseCursor(after)
	if err != nil {
		return nil, after, err
	}
	page, err := e.signals.Changes(ctx, events.ChangesQuery{After: cur.Signal, Limit: limit})
	if err != nil {
		return nil, after, err
	}
	if len(page.Changes) == 0 {
		time.Sleep(10 * time.Millisecond) // the service's feed waits for a signal here
	}
	return page.Changes, events.Cursor{Signal: page.Next}.String(), nil
}

// run runs a runner until the test ends or stop is called.
func (e *env) run() (stop func()) {
	ctx, cancel := context.WithCancel(e.t.Context())
	r := destination.NewRunner(destination.RunnerConfig{
		Store: e.store, Feed: e.feed, Source: "https://menus.example",
		Openers:    map[string]destination.Opener{destination.TypeKafka: e.sink.open},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		PageSize:   3,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

func (e *env) signal(slug string, rev int64) {
	e.t.Helper()
	if err := e.signals.Publish(e.t.Context(), events.Signal{Establishment: slug, Revision: rev, Resources: []string{"hours"}, Time: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) create(body string) destination.Status {
	e.t.Helper()
	spec, sec, err := destination.ParseRegistration([]byte(body))
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := e.store.Create(e.t.Context(), spec, sec)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// eventually polls cond until it holds, or fails the test after ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

const kafkaBody = `{"type": "kafka", "brokers": ["k:9092"], "topic": "menus", "sasl": {"mechanism": "PLAIN", "username": "u", "password": "kafka-secret-pw"}}`

func TestRunnerPublishesEveryChangeInOrderAndResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signal("before", 1) // before the registration: a destination that starts now skips it
	st := e.create(kafkaBody)
	stop := e.run()
	for rev := int64(2); rev <= 6; rev++ {
		e.signal("a", rev)
		e.signal("b", rev)
	}
	eventually(t, "every change published", func() bool { l := e.sink.latest(t); return l["a"] == 6 && l["b"] == 6 })
	if l := e.sink.latest(t); l["before"] != 0 {
		t.Errorf("a change before the registration was published: %v", l)
	}
	for _, ev := range e.sink.got {
		if ev.Source != "https://menus.example" || ev.ID == "" || ev.Time.IsZero() || ev.Subject != ev.Data.Establishment {
			t.Errorf("event %+v: want the service's source, an id, a time and the slug as subject", ev)
		}
	}
	stop()
	published := len(e.sink.got)
	got, err := e.store.Get(t.Context(), st.ID)
	if err != nil || got.Published != uint64(published) || got.State != destination.StateActive {
		t.Errorf("status %+v, %v; want %d published, active", got, err, published)
	}

	// A runner started again goes on from the stored position: nothing twice.
	e.signal("a", 7)
	stop = e.run()
	defer stop()
	eventually(t, "the change made while stopped", func() bool { return e.sink.latest(t)["a"] == 7 })
	if n := len(e.sink.got); n != published+1 {
		t.Errorf("%d events after the restart, want %d: one", n-published, 1)
	}
}

func TestRunnerRetriesAFailingBrokerAndLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.create(kafkaBody)
	e.sink.setRefuse(errors.New("kafka: brokers unreachable"))
	defer e.run()()
	for rev := int64(1); rev <= 5; rev++ {
		e.signal("a", rev)
	}
	eventually(t, "failing", func() bool {
		got, err := e.store.Get(t.Context(), st.ID)
		return err == nil && got.State == destination.StateFailing && got.Failures >= 2 && got.LastError != ""
	})
	got, _ := e.store.Get(t.Context(), st.ID)
	if !bytes.Contains([]byte(got.LastError), []byte("brokers unreachable")) {
		t.Errorf("last error %q, want the broker's", got.LastError)
	}
	e.sink.setRefuse(nil)
	eventually(t, "everything published once the broker is back", func() bool { return e.sink.latest(t)["a"] == 5 })
	eventually(t, "active again", func() bool {
		got, err := e.store.Get(t.Context(), st.ID)
		return err == nil && got.State == destination.StateActive
	})
}

func TestPausedDestinationPublishesItsBacklogWhenResumed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.create(kafkaBody)
	defer e.run()()
	e.signal("a", 1)
	eventually(t, "the first change", func() bool { return e.sink.latest(t)["a"] == 1 })
	if _, err := e.store.SetPaused(t.Context(), st.ID, true); err != nil {
		t.Fatal(err)
	}
	e.sink.mu.Lock()
	calls := e.sink.publish
	e.sink.mu.Unlock()
	e.signal("a", 2)
	got, err := e.store.Get(t.Context(), st.ID)
	if err != nil || got.State != destination.StatePaused {
		t.Fatalf("status %+v, %v; want paused", got, err)
	}
	var lag destination.Status
	eventually(t, "the lag of the paused destination", func() bool {
		lag, _ = e.store.Get(t.Context(), st.ID)
		return lag.LagRecords >= 1
	})
	if lag.LagSeconds < 0 {
		t.Errorf("lag %+v", lag)
	}
	e.sink.mu.Lock()
	if e.sink.publish > calls+1 { // one page may have been in flight when it paused
		t.Errorf("published while paused: %d calls after %d", e.sink.publish, calls)
	}
	e.sink.mu.Unlock()
	if _, err := e.store.SetPaused(t.Context(), st.ID, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backlog once resumed", func() bool { return e.sink.latest(t)["a"] == 2 })
}

func TestFilteredDestinationPublishesOnlyItsEstablishments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(`{"type": "kafka", "brokers": ["k:9092"], "topic": "menus", "establishments": ["b"]}`)
	defer e.run()()
	for rev := int64(1); rev <= 4; rev++ {
		e.signal("a", rev)
		e.signal("b", rev)
	}
	eventually(t, "b's changes", func() bool { return e.sink.latest(t)["b"] == 4 })
	if l := e.sink.latest(t); len(l) != 1 {
		t.Errorf("published %v, want b alone", l)
	}
}

func TestDestinationBehindTheRetentionSyncsAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.create(kafkaBody)
	// Until a first sync starts, every position is older than the signals kept.
	e.gone = func(after string) bool { return after != "" && e.syncs.Load() == 0 }
	defer e.run()()
	eventually(t, "a gap recorded and a first sync", func() bool {
		got, err := e.store.Get(t.Context(), st.ID)
		return err == nil && got.Gaps == 1 && !got.LastGapAt.IsZero() && e.syncs.Load() == 1
	})
	e.signal("a", 1)
	eventually(t, "the changes after the sync", func() bool { return e.sink.latest(t)["a"] == 1 })
}

func TestCredentialsAreSealedAndNeverShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.create(kafkaBody)
	kv, err := e.js.KeyValue(t.Context(), destination.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(entry.Value(), []byte("kafka-secret-pw")) {
		t.Errorf("the stored record holds the password in clear: %s", entry.Value())
	}
	list, err := e.store.List(t.Context())
	if err != nil || len(list) != 1 || fmt.Sprintf("%+v", list) == "" || bytes.Contains([]byte(fmt.Sprintf("%+v", list)), []byte("kafka-secret-pw")) {
		t.Errorf("List = %+v, %v; want one destination without its password", list, err)
	}
	if err := e.store.Delete(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Get(t.Context(), st.ID); !errors.Is(err, destination.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := e.store.Get(t.Context(), "../../etc"); !errors.Is(err, destination.ErrNotFound) {
		t.Errorf("Get of a malformed id: %v, want ErrNotFound", err)
	}
}

// gatedSink is a broker whose publications hang until released, whatever their context says, as
// a client still sending a batch when its caller gave up; it counts publications at once.
type gatedSink struct {
	sink
	gate           chan struct{}
	inFlight, most atomic.Int64
	opens          atomic.Int64
}

func (g *gatedSink) open(context.Context, destination.Spec, destination.Secrets) (destination.Sink, error) {
	g.opens.Add(1)
	return g, nil
}

func (g *gatedSink) Publish(ctx context.Context, evs []destination.Event) error {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	<-g.gate
	return g.sink.Publish(ctx, evs)
}

func TestResumedDestinationWaitsForThePageStillInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := &gatedSink{gate: make(chan struct{})}
	st := e.create(kafkaBody)
	r := destination.NewRunner(destination.RunnerConfig{
		Store: e.store, Feed: e.feed, Openers: map[string]destination.Opener{destination.TypeKafka: g.open},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MinBackoff: 10 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var release sync.Once
	defer func() { release.Do(func() { close(g.gate) }); cancel(); <-done }()
	e.signal("a", 1)
	eventually(t, "a page in flight", func() bool { return g.inFlight.Load() == 1 })
	if _, err := e.store.SetPaused(t.Context(), st.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.SetPaused(t.Context(), st.ID, false); err != nil {
		t.Fatal(err)
	}
	// The resumed destination does not open its broker while the page is still in flight: for a
	// second, the count stays at the first opening.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if g.opens.Load() > 1 {
			t.Fatal("the resumed destination started while its previous page was in flight")
		}
	}
	release.Do(func() { close(g.gate) })
	eventually(t, "the page published once released", func() bool { return g.latest(t)["a"] == 1 })
	if g.most.Load() != 1 {
		t.Errorf("%d publications at once, want 1", g.most.Load())
	}
}

func TestRegistrationsAtOnceStayWithinTheBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for range destination.MaxDestinations - 1 {
		e.create(kafkaBody)
	}
	spec, sec, err := destination.ParseRegistration([]byte(kafkaBody))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var created, refused atomic.Int64
	for range 6 {
		wg.Go(func() {
			_, err := e.store.Create(t.Context(), spec, sec)
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, destination.ErrTooMany):
				refused.Add(1)
			default:
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	list, err := e.store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > destination.MaxDestinations || created.Load() > 1 || len(list) != destination.MaxDestinations-1+int(created.Load()) {
		t.Errorf("%d destinations after %d created and %d refused at once, want at most %d", len(list), created.Load(), refused.Load(), destination.MaxDestinations)
	}
}
