package clock

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/internal/sample"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

var day1 = domain.LocalDate{Year: 2026, Month: 11, Day: 24}

// env is a real JetStream server with the event log, the write side and a date every time zone
// shares, which tests move.
type env struct {
	nc    *nats.Conn
	store *events.Store
	index *Index
	today atomic.Pointer[domain.LocalDate]
	// now, when set, is the clock's instant, schedule and calendar alike; unset, the calendar
	// has no instant (the date is fixed) and the schedule follows the wall clock.
	now  atomic.Pointer[time.Time]
	cmds *app.Commands
	logs *syncBuffer
}

func newEnv(tb testing.TB, srv *server.Server) *env {
	tb.Helper()
	e := &env{nc: natstest.Connect(tb, srv), logs: &syncBuffer{}}
	e.today.Store(&day1)
	var err error
	if e.store, err = events.Open(tb.Context(), e.nc, events.Config{}); err != nil {
		tb.Fatal(err)
	}
	if e.index, err = OpenIndex(tb.Context(), e.nc, 1); err != nil {
		tb.Fatal(err)
	}
	e.cmds = e.commands(tb)
	return e
}

func (e *env) clockFunc(*time.Location) domain.LocalDate { return *e.today.Load() }

func (e *env) nowFunc() time.Time {
	t, _ := e.instantFunc()
	if t.IsZero() {
		return time.Now()
	}
	return t
}

func (e *env) instantFunc() (time.Time, bool) {
	if t := e.now.Load(); t != nil {
		return *t, true
	}
	return time.Time{}, false
}

func (e *env) logger() *slog.Logger { return slog.New(slog.NewTextHandler(e.logs, nil)) }

// commands returns a write side of its own (its own cache) over the shared log.
func (e *env) commands(tb testing.TB) *app.Commands {
	tb.Helper()
	snaps, err := events.OpenSnapshots(tb.Context(), e.nc, 1)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := app.New(app.Config{Log: e.store, Snapshots: snaps, Clock: e.clockFunc, Logger: e.logger()})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newClock returns a clock over e whose days are started by days, running its loop until the
// test ends. Its ticker is slow: tests tick it themselves.
func (e *env) newClock(tb testing.TB, days dayStarter) *Clock {
	tb.Helper()
	c, err := New(Config{Days: days, Log: e.store, Index: e.index, Today: e.clockFunc, Logger: e.logger(), Interval: time.Hour,
		Now: e.nowFunc, Instant: e.instantFunc})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			tb.Errorf("clock Run returned %v, want %v", err, context.Canceled)
		}
	})
	return c
}

// importAll imports n generated establishments and returns how many depend on the date.
func (e *env) importAll(tb testing.TB, first, n int) (slugs []string, dependent map[string]bool) {
	tb.Helper()
	dependent = map[string]bool{}
	for i := first; i < first+n; i++ {
		s := sample.Establishment(3, i, day1)
		if _, err := e.cmds.Import(tb.Context(), app.Request{Slug: domain.Slug(s.Slug)}, s); err != nil {
			tb.Fatalf("import %s: %v", s.Slug, err)
		}
		slugs = append(slugs, s.Slug)
		dependent[s.Slug] = sample.DateDependent(s)
	}
	return slugs, dependent
}

// waitIndexed waits until the index holds every date-dependent slug of slugs with the calendar
// of its last record (the others need no entry).
func (e *env) waitIndexed(tb testing.TB, slugs []string, dependent map[string]bool) {
	tb.Helper()
	var want []string
	for _, slug := range slugs {
		if dependent[slug] {
			want = append(want, slug)
		}
	}
	slugs = want
	eventually(tb, "index caught up with the log", func() bool {
		want := map[string]uint64{}
		for _, slug := range slugs {
			seq, err := e.store.LastSequence(tb.Context(), slug)
			if err != nil {
				tb.Fatal(err)
			}
			want[slug] = seq
		}
		got := map[string]uint64{}
		if err := e.index.Scan(tb.Context(), func(slug string, en Entry) error {
			got[slug] = en.Sequence
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
		for slug, seq := range want {
			if got[slug] < seq {
				return false
			}
		}
		return true
	})
}

// waitComplete waits until a sweep has made the index complete.
func (e *env) waitComplete(tb testing.TB) {
	tb.Helper()
	eventually(tb, "index complete", func() bool {
		ok, err := e.index.Complete(tb.Context())
		if err != nil {
			tb.Fatal(err)
		}
		return ok
	})
}

// days counts the day-started events of slug in the log.
func (e *env) days(tb testing.TB, slug string, date domain.LocalDate) int {
	tb.Helper()
	recs, err := e.store.History(tb.Context(), slug)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		for _, ev := range r.Events {
			if ev.Type == domain.TypeDayStarted && strings.Contains(string(ev.Payload), date.String()) {
				n++
			}
		}
	}
	return n
}

func eventually(tb testing.TB, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a new day, a pass starts the day of every establishment whose documents depend on the date,
// once, and of no other; a second pass that day appends nothing.
func TestNewDayStartsDependentEstablishmentsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c := e.newClock(t, e.cmds)
	e.waitComplete(t)
	slugs, dependent := e.importAll(t, 0, 40)
	e.waitIndexed(t, slugs, dependent)

	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	p, err := c.Tick(t.Context())
	if err != nil || p == nil {
		t.Fatalf("tick on a new day: got %+v, %v, want a pass", p, err)
	}
	wantDue := 0
	for _, slug := range slugs {
		want := 0
		if dependent[slug] {
			want, wantDue = 1, wantDue+1
		}
		if got := e.days(t, slug, day2); got != want {
			t.Errorf("%s (date-dependent %t): %d day-started events for %s, want %d", slug, dependent[slug], got, day2, want)
		}
	}
	if p.Due != wantDue || p.Appended != wantDue || p.Failed != 0 {
		t.Errorf("pass: got %+v, want %d due and appended, no failure", p, wantDue)
	}
	if p, err = c.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p != nil && p.Appended != 0 {
		t.Errorf("second tick of the day appended %d days", p.Appended)
	}
}

// Within the lead of its zone's midnight, and not before, a pass prepares the next day of every
// establishment whose documents depend on the date, once, starting at that midnight; the day
// still starts on its date.
func TestNextDayIsPreparedBeforeMidnight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	slugs, dependent := e.importAll(t, 0, 40)
	day2 := day1.AddDays(1)
	zones := map[string]*time.Location{}
	var first, last time.Time // the earliest and the latest start of a preparation
	for _, slug := range slugs {
		if !dependent[slug] {
			continue
		}
		est, err := e.cmds.Get(t.Context(), domain.Slug(slug))
		if err != nil {
			t.Fatal(err)
		}
		loc := (&domain.Establishment{TimeZone: est.Establishment.TimeZone}).Location()
		zones[slug] = loc
		opens := time.Date(day2.Year, day2.Month, day2.Day, 0, 0, 0, 0, loc).Add(-DefaultLead)
		if first.IsZero() || opens.Before(first) {
			first = opens
		}
		last = later(last, opens)
	}
	if len(zones) == 0 || first.Equal(last) {
		t.Fatalf("want date-dependent establishments in several time zones, got %d", len(zones))
	}
	before := first.Add(-time.Minute)
	e.now.Store(&before)
	c := e.newClock(t, e.cmds)
	e.waitComplete(t)
	e.waitIndexed(t, slugs, dependent)
	if p, err := c.Tick(t.Context()); err != nil || p != nil && p.Ahead+p.Prepared != 0 {
		t.Fatalf("a minute before the first zone's lead: got %+v, %v, want nothing prepared", p, err)
	}

	e.now.Store(&last)
	p, err := c.Tick(t.Context())
	if err != nil || p == nil || p.Ahead != len(zones) || p.Prepared != len(zones) || p.Due != 0 || p.Failed != 0 {
		t.Fatalf("within every zone's lead: got %+v, %v, want %d next days prepared", p, err, len(zones))
	}
	for _, slug := range slugs {
		got := e.aheads(t, slug)
		if loc := zones[slug]; loc == nil && len(got) != 0 || loc != nil && (len(got) != 1 || got[0].Date != day2 ||
			!got[0].Starts.Equal(time.Date(day2.Year, day2.Month, day2.Day, 0, 0, 0, 0, loc))) {
			t.Errorf("%s (date-dependent %t): prepared %+v, want %s once from its midnight", slug, dependent[slug], got, day2)
		}
	}
	if st := c.Status(); st.Prepared != int64(len(zones)) {
		t.Errorf("status: %d next days prepared, want %d", st.Prepared, len(zones))
	}
	e.waitIndexed(t, slugs, dependent)
	again := last.Add(15 * time.Minute)
	e.now.Store(&again)
	if p, err := c.Tick(t.Context()); err != nil || p == nil || p.Prepared != 0 {
		t.Errorf("the next quarter: got %+v, %v, want a pass preparing nothing", p, err)
	}

	e.today.Store(&day2)
	if p, err := c.Tick(t.Context()); err != nil || p == nil || p.Appended != len(zones) || p.Prepared != 0 {
		t.Errorf("on the day: got %+v, %v, want %d days started", p, err, len(zones))
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// aheads returns the day-ahead events of slug in the log.
func (e *env) aheads(tb testing.TB, slug string) []domain.DayAhead {
	tb.Helper()
	recs, err := e.store.History(tb.Context(), slug)
	if err != nil {
		tb.Fatal(err)
	}
	var out []domain.DayAhead
	for _, r := range recs {
		for _, env := range r.Events {
			if env.Type != domain.TypeDayAhead {
				continue
			}
			ev, err := domain.DecodeEvent(env.Type, env.SchemaVersion, env.Payload)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, ev.(domain.DayAhead))
		}
	}
	return out
}

// A failure on one establishment stops neither the others nor the process, is named in the
// pass's summary, and is retried on the next tick.
func TestFailureOnOneEstablishmentIsIsolated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	slugs, dependent := e.importAll(t, 100, 20)
	c := e.newClock(t, e.cmds)
	e.waitComplete(t)
	e.waitIndexed(t, slugs, dependent)
	var broken string
	for _, slug := range slugs {
		if dependent[slug] {
			broken = slug
			break
		}
	}
	// A record nobody can read lands on the establishment's subject, as a damaged store or a
	// foreign writer would leave it: loading it fails from now on.
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(t.Context(), "events."+broken, []byte("not a record")); err != nil {
		t.Fatal(err)
	}

	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	p, err := c.Tick(t.Context())
	if err != nil || p == nil {
		t.Fatalf("tick: got %+v, %v", p, err)
	}
	if p.Failed != 1 || p.Appended != p.Due-1 || len(p.Examples) != 1 || !strings.HasPrefix(p.Examples[0], broken+": ") {
		t.Errorf("pass: got %+v, want one failure on %s and every other due day started", p, broken)
	}
	for _, slug := range slugs {
		if slug == broken {
			continue // its history cannot be read
		}
		if want := map[bool]int{true: 1, false: 0}[dependent[slug]]; e.days(t, slug, day2) != want {
			t.Errorf("%s: got %d days started, want %d", slug, e.days(t, slug, day2), want)
		}
	}
	// The next tick retries it, although no date moved.
	if p, err = c.Tick(t.Context()); err != nil || p == nil || p.Failed != 1 {
		t.Errorf("next tick: got %+v, %v, want a pass retrying the failure", p, err)
	}
	if !strings.Contains(e.logs.String(), "failed=1") {
		t.Errorf("no pass summary naming the failure in the log")
	}
}

// Several clocks, each with its own write side, start each day once.
func TestSeveralClocksStartEachDayOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	clocks := []*Clock{e.newClock(t, e.commands(t)), e.newClock(t, e.commands(t)), e.newClock(t, e.commands(t))}
	e.waitComplete(t)
	slugs, dependent := e.importAll(t, 200, 30)
	e.waitIndexed(t, slugs, dependent)
	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	var wg sync.WaitGroup
	for _, c := range clocks {
		wg.Go(func() {
			if _, err := c.Tick(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, slug := range slugs {
		want := map[bool]int{true: 1, false: 0}[dependent[slug]]
		if got := e.days(t, slug, day2); got != want {
			t.Errorf("%s: %d days started by three clocks, want %d", slug, got, want)
		}
	}
}

// A clock whose index is empty, on a log written before it existed, sweeps every establishment
// once and then keeps the index from the log; on a server that allows a handful of consumers per
// stream, for many more establishments than that.
func TestSweepBuildsTheIndexUnderAConsumerLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.StartLimited(t, 10))
	slugs, dependent := e.importAll(t, 300, 60) // before any clock: no index, no reader
	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	c := e.newClock(t, e.cmds) // its first tick sweeps
	eventually(t, "sweep done", func() bool {
		s := c.Status()
		return s.LastPass != nil && s.LastPass.Kind == "sweep"
	})
	p := c.Status().LastPass
	if p.Examined != len(slugs) || p.Failed != 0 {
		t.Fatalf("sweep: got %+v, want %d examined and no failure", p, len(slugs))
	}
	if complete, err := e.index.Complete(t.Context()); err != nil || !complete {
		t.Fatalf("index complete after the sweep: got %t, %v", complete, err)
	}
	e.waitIndexed(t, slugs, dependent)
	for _, slug := range slugs {
		if want := map[bool]int{true: 1, false: 0}[dependent[slug]]; e.days(t, slug, day2) != want {
			t.Errorf("%s: got %d days started by the sweep, want %d", slug, e.days(t, slug, day2), want)
		}
	}
	// Kept from the log from now on: a new establishment is indexed without a sweep.
	more, moreDependent := e.importAll(t, 400, 5)
	e.waitIndexed(t, more, moreDependent)
}

// The summary of a pass stays small whatever fails: counts and a few clipped examples.
func TestPassSummaryIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	fail := failingDays{err: fmt.Errorf("boom: %s", strings.Repeat("x", 100_000))}
	c, err := New(Config{Days: fail, Log: e.store, Index: e.index, Today: e.clockFunc, Logger: e.logger(), Instant: e.instantFunc})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := e.index.Put(t.Context(), fmt.Sprintf("est-%d", i), Entry{Calendar: app.Calendar{Zone: "Europe/Paris", Dependent: true, Today: day1}, Sequence: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.index.setComplete(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	p, err := c.Tick(t.Context())
	if err != nil || p == nil || p.Failed != 300 || len(p.Examples) != maxExamples {
		t.Fatalf("pass: got %+v, %v, want 300 failures and %d examples", p, err, maxExamples)
	}
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if len(line) > 4096 {
			t.Errorf("log line of %d bytes: %.200s…", len(line), line)
		}
	}
}

type failingDays struct{ err error }

func (f failingDays) StartDay(context.Context, domain.Slug) (app.DayResult, error) {
	return app.DayResult{}, f.err
}

func (f failingDays) StartDayAt(context.Context, domain.Slug, app.Calendar, uint64) (app.DayResult, error) {
	return app.DayResult{}, f.err
}

func (f failingDays) PrepareDayAt(context.Context, domain.Slug, app.Calendar, uint64) (app.DayResult, error) {
	return app.DayResult{}, f.err
}

// An establishment that fails at every try during the sweep that builds the index holds no other
// back: the index is complete once every establishment was looked at, the others' days start,
// and the failing one is tried again at each following tick.
func TestSweepFailureHoldsNoOtherBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	slugs, dependent := e.importAll(t, 500, 20)
	var broken string
	for _, slug := range slugs {
		if dependent[slug] {
			broken = slug
			break
		}
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(t.Context(), "events."+broken, []byte("not a record")); err != nil {
		t.Fatal(err)
	}
	day2 := day1.AddDays(1)
	e.today.Store(&day2)
	c := e.newClock(t, e.cmds) // its first tick sweeps
	e.waitComplete(t)
	for _, slug := range slugs {
		if slug == broken {
			continue
		}
		if want := map[bool]int{true: 1, false: 0}[dependent[slug]]; e.days(t, slug, day2) != want {
			t.Errorf("%s: %d days started by the sweep, want %d", slug, e.days(t, slug, day2), want)
		}
	}
	p, err := c.Tick(t.Context())
	if err != nil || p == nil {
		t.Fatalf("next tick: got %+v, %v", p, err)
	}
	if st := c.Status(); st.Passes < 2 {
		t.Errorf("got %d passes, want the sweep and a retry at least", st.Passes)
	}
	if !strings.Contains(e.logs.String(), "kind=retry examined=1") {
		t.Errorf("no retry of the failing establishment in the log:\n%s", e.logs.String())
	}
}

// A reader of calendar headers that disappears is made again, and the index is rebuilt: an
// establishment imported afterwards is indexed, and its day starts.
func TestLostReaderIsMadeAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c := e.newClock(t, e.cmds)
	e.waitComplete(t)
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(t.Context(), events.StreamName, ReaderName); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reader made again and the index rebuilt", func() bool {
		if _, err := js.Consumer(t.Context(), events.StreamName, ReaderName); err != nil {
			return false
		}
		if _, err := c.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		ok, err := e.index.Complete(t.Context())
		return err == nil && ok
	})
	slugs, dependent := e.importAll(t, 600, 10)
	e.waitIndexed(t, slugs, dependent)
}
