package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/internal/sample"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

var testToday = domain.LocalDate{Year: 2026, Month: 11, Day: 24}

// env is a real JetStream server with the event log and the snapshot bucket.
type env struct {
	srv   *server.Server
	store *events.Store
	snaps *events.Snapshots
	today atomic.Pointer[domain.LocalDate]
}

func newEnv(tb testing.TB, srv *server.Server) *env {
	tb.Helper()
	nc := natstest.Connect(tb, srv)
	store, err := events.Open(tb.Context(), nc, events.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	snaps, err := events.OpenSnapshots(tb.Context(), nc, 1)
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{srv: srv, store: store, snaps: snaps}
	e.today.Store(&testToday)
	return e
}

// reads counts the records the commands read from the log.
type reads struct {
	eventLog
	records atomic.Int64
	ranges  atomic.Int64 // reads under an establishment's subject (Range)
}

func (r *reads) Range(ctx context.Context, slug string, from, to uint64) ([]events.Record, error) {
	recs, err := r.eventLog.Range(ctx, slug, from, to)
	r.records.Add(int64(len(recs)))
	r.ranges.Add(1)
	return recs, err
}

func (r *reads) Chain(ctx context.Context, slug string, after, last uint64) ([]events.Record, bool, error) {
	recs, ok, err := r.eventLog.Chain(ctx, slug, after, last)
	r.records.Add(int64(len(recs)))
	return recs, ok, err
}

// commands returns fresh commands over e, with an empty cache, counting the records they read.
func (e *env) commands(tb testing.TB, cfg Config) (*Commands, *reads) {
	tb.Helper()
	r := &reads{eventLog: e.store}
	cfg.Log = r
	if cfg.Snapshots == nil {
		cfg.Snapshots = e.snaps
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Clock = func(*time.Location) domain.LocalDate { return *e.today.Load() }
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c, r
}

// establishment returns generated establishment i: varied, valid, active unless drawn as a draft.
func establishment(i int) domain.EstablishmentInput { return sample.Establishment(1, i, testToday) }

// dependentEstablishment returns the first generated establishment from i on whose documents
// depend on the date.
func dependentEstablishment(i int) domain.EstablishmentInput {
	for ; ; i++ {
		if s := establishment(i); sample.DateDependent(s) {
			return s
		}
	}
}

func mustImport(tb testing.TB, c *Commands, s domain.EstablishmentInput) KeyResult {
	tb.Helper()
	res, err := c.Import(tb.Context(), Request{Slug: domain.Slug(s.Slug)}, s)
	if err != nil {
		tb.Fatalf("import %s: %v", s.Slug, err)
	}
	return res
}

// Loading an establishment reads at most SnapshotEvery records, however long its history: the
// rest comes from its snapshot.
func TestLoadIsBoundedBySnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	writer, _ := e.commands(t, Config{SnapshotEvery: 4})
	s := establishment(1)
	slug := domain.Slug(s.Slug)
	mustImport(t, writer, s)
	for i := range 40 {
		if _, err := writer.SetMenuRedirect(t.Context(), Request{Slug: slug}, i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	want, err := writer.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}

	reader, counted := e.commands(t, Config{SnapshotEvery: 4})
	got, err := reader.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want.Version || *got.Establishment.Settings.MenuRedirectEnabled != *want.Establishment.Settings.MenuRedirectEnabled {
		t.Errorf("state from the snapshot: got version %d, want %d", got.Version, want.Version)
	}
	if n := counted.records.Load(); n > 4 {
		t.Errorf("loading a 41-record history read %d records, want at most 4", n)
	}
}

// An establishment without a snapshot is loaded from its records read back from its last, each
// through the one it follows, whatever else the log holds in between.
func TestLoadReadsRecordsThroughTheOnesTheyFollow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	writer, _ := e.commands(t, Config{SnapshotEvery: 100})
	a, b := establishment(1), establishment(2)
	mustImport(t, writer, a)
	mustImport(t, writer, b)
	for i := range 3 {
		for _, s := range []domain.Slug{domain.Slug(a.Slug), domain.Slug(b.Slug)} {
			if _, err := writer.SetMenuRedirect(t.Context(), Request{Slug: s}, i%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := writer.Get(t.Context(), domain.Slug(a.Slug))
	if err != nil {
		t.Fatal(err)
	}

	reader, counted := e.commands(t, Config{SnapshotEvery: 100})
	got, err := reader.Get(t.Context(), domain.Slug(a.Slug))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want.Version || *got.Establishment.Settings.MenuRedirectEnabled != *want.Establishment.Settings.MenuRedirectEnabled {
		t.Errorf("loaded at version %d, want %d", got.Version, want.Version)
	}
	history, err := e.store.History(t.Context(), a.Slug)
	if err != nil || len(history) < 3 {
		t.Fatalf("History = %d records, %v; want 3 or more", len(history), err)
	}
	if n, r := counted.records.Load(), counted.ranges.Load(); n != int64(len(history)-1) || r != 0 {
		t.Errorf("loading %d records read %d before the last, %d times under the subject; want %d, never", len(history), n, r, len(history)-1)
	}
}

// A snapshot is a cache: one of another format, or one that does not match the log at its
// sequence, is ignored and the state is folded from the log; deleting them all loses nothing.
func TestSnapshotsNeverDecide(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	writer, _ := e.commands(t, Config{SnapshotEvery: 1})
	s := establishment(2)
	slug := domain.Slug(s.Slug)
	mustImport(t, writer, s)
	if _, err := writer.SetMenuRedirect(t.Context(), Request{Slug: slug}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.SetMenuRedirect(t.Context(), Request{Slug: slug}, false); err != nil {
		t.Fatal(err)
	}
	truth, err := writer.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	good, ok, err := e.snaps.Get(t.Context(), s.Slug)
	if err != nil || !ok {
		t.Fatalf("no snapshot written: %v", err)
	}
	forged := func(edit func(*events.Snapshot)) events.Snapshot {
		snap := good
		a, _ := fromSnapshot(slug, good)
		a.est.Identity.Name = "Forged"
		snap, _ = a.snapshot()
		edit(&snap)
		return snap
	}
	cases := []struct {
		name string
		snap *events.Snapshot
	}{
		{"written by code of another format", ptr(forged(func(s *events.Snapshot) { s.Format = "app/0+establishment/0/0" }))},
		{"of another record at the same sequence", ptr(forged(func(s *events.Snapshot) { s.CommandID = "cmd_other" }))},
		{"older, of a record the log does not hold", ptr(forged(func(s *events.Snapshot) { s.Sequence--; s.CommandID = "cmd_gone" }))},
		{"ahead of the log", ptr(forged(func(s *events.Snapshot) { s.Sequence += 100 }))},
		{"unreadable", ptr(forged(func(s *events.Snapshot) { s.State = []byte("{") }))},
		{"deleted", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.snap == nil {
				if err := e.snaps.Delete(t.Context(), s.Slug); err != nil {
					t.Fatal(err)
				}
			} else if err := e.snaps.Put(t.Context(), *tc.snap); err != nil {
				t.Fatal(err)
			}
			reader, _ := e.commands(t, Config{SnapshotEvery: 1})
			got, err := reader.Get(t.Context(), slug)
			if err != nil {
				t.Fatal(err)
			}
			if got.Establishment.Name != truth.Establishment.Name || got.Version != truth.Version {
				t.Errorf("got %q at version %d, want %q at %d", got.Establishment.Name, got.Version, truth.Establishment.Name, truth.Version)
			}
			// The load wrote a snapshot of the log's truth in its place.
			if snap, ok, _ := e.snaps.Get(t.Context(), s.Slug); !ok || snap.CommandID != good.CommandID || snap.Format != snapshotFormat() {
				t.Errorf("snapshot after the load: got sequence %d, command %s, format %s (found %t), want the log's %d, %s, %s",
					snap.Sequence, snap.CommandID, snap.Format, ok, good.Sequence, good.CommandID, snapshotFormat())
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The cache holds at most CacheSize aggregates, whatever the number of establishments used.
func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{CacheSize: 5})
	for i := range 40 {
		mustImport(t, c, establishment(100+i))
	}
	if n := c.repo.cache.Len(); n > 5 {
		t.Errorf("cache holds %d aggregates, want at most 5", n)
	}
	if n := len(c.locks.slugs); n != 0 {
		t.Errorf("%d establishment locks remain with no command in flight, want 0", n)
	}
}

// Many establishments written and read at once, by two processes, on a server that allows a
// handful of consumers per stream: every command succeeds and no consumer is left.
func TestManyEstablishmentsUnderAConsumerLimit(t *testing.T) {
	t.Parallel()
	srv := natstest.StartLimited(t, 20)
	e := newEnv(t, srv)
	a, _ := e.commands(t, Config{CacheSize: 10})
	b, _ := e.commands(t, Config{CacheSize: 10})
	const n = 120
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		s := establishment(200 + i)
		wg.Go(func() {
			if _, err := a.Import(t.Context(), Request{Slug: domain.Slug(s.Slug)}, s); err != nil {
				errs <- fmt.Errorf("import %s: %w", s.Slug, err)
				return
			}
			if _, err := b.Get(t.Context(), domain.Slug(s.Slug)); err != nil {
				errs <- fmt.Errorf("get %s: %w", s.Slug, err)
			}
			if _, err := b.SetMenuRedirect(t.Context(), Request{Slug: domain.Slug(s.Slug)}, true); err != nil {
				errs <- fmt.Errorf("set redirect %s: %w", s.Slug, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{events.StreamName, "KV_" + events.SnapshotBucket} {
		st, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers != 0 {
			t.Errorf("stream %s: %d consumers left, want 0", name, info.State.Consumers)
		}
	}
}

// StartDay appends a day only to an establishment whose documents depend on the date, once per
// day, and refuses an unknown establishment.
func TestStartDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	dep := dependentEstablishment(10)
	mustImport(t, c, dep)
	still := establishment(0)
	still.SpecialHours, still.MenuTypes = nil, nil
	still.Slug = "no-calendar"
	mustImport(t, c, still)

	tomorrow := testToday.AddDays(1)
	e.today.Store(&tomorrow)
	for round := range 2 {
		res, err := c.StartDay(t.Context(), domain.Slug(dep.Slug))
		if err != nil {
			t.Fatal(err)
		}
		if wantEvents := 1 - round; res.Events != wantEvents || res.Calendar.Today != tomorrow || !res.Calendar.Dependent || res.Calendar.Zone != dep.TimeZone {
			t.Errorf("round %d: got %+v, want %d event, calendar %s dependent on %s", round, res, wantEvents, dep.TimeZone, tomorrow)
		}
	}
	res, err := c.StartDay(t.Context(), "no-calendar")
	if err != nil || res.Events != 0 || res.Calendar.Dependent {
		t.Errorf("establishment without date-dependent content: got %+v %v, want no event and not dependent", res, err)
	}
	if _, err := c.StartDay(t.Context(), "nowhere"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown establishment: got %v, want %v", err, domain.ErrNotFound)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	other := errors.New("other")
	tests := []struct {
		err  error
		want Kind
	}{
		{&domain.FieldError{Field: "name", Reason: "required"}, KindInvalid},
		{fmt.Errorf("x: %w", domain.ErrNotFound), KindNotFound},
		{fmt.Errorf("x: %w", domain.ErrMenuVersionNotFound), KindNotFound},
		{domain.ErrInvalidTransition, KindConflict},
		{ErrConflict, KindConflict},
		{fmt.Errorf("%w: big", ErrTooLarge), KindTooLarge},
		{context.DeadlineExceeded, KindUnavailable},
		{fmt.Errorf("Idempotency-Key: %w", ErrIdempotencyKeyReused), KindInvalid},
		{other, KindInternal},
	}
	for _, tt := range tests {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v): got %d, want %d", tt.err, got, tt.want)
		}
	}
	if got := KindOf(other, KindRule{Target: other, Kind: KindNotFound}); got != KindNotFound {
		t.Errorf("KindOf with a rule: got %d, want %d", got, KindNotFound)
	}
}

// StartDayAt appends on the calendar it is given while that calendar is the establishment's
// last record's, without reading the establishment, and decides on the loaded state otherwise.
func TestStartDayAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, counted := e.commands(t, Config{})
	dep := dependentEstablishment(20)
	slug := domain.Slug(dep.Slug)
	imported := mustImport(t, c, dep)
	cal := Calendar{Zone: dep.TimeZone, Dependent: true, Today: testToday}

	day2 := testToday.AddDays(1)
	e.today.Store(&day2)
	before := counted.records.Load()
	res, err := c.StartDayAt(t.Context(), slug, cal, imported.Version)
	if err != nil || !res.Direct || res.Events != 1 || res.Calendar.Today != day2 {
		t.Fatalf("on the last record's calendar: got %+v, %v, want one event appended directly", res, err)
	}
	if n := counted.records.Load() - before; n != 0 {
		t.Errorf("a direct day start read %d records, want none", n)
	}
	got, err := c.Get(t.Context(), slug)
	if err != nil || got.Today != day2.String() || got.Version != res.Version {
		t.Errorf("state after a direct day start: today %s version %d (%v), want %s at %d", got.Today, got.Version, err, day2, res.Version)
	}

	// A calendar of an older record: the log moved, and the calendar in the header of its last
	// record decides as directly.
	day3 := day2.AddDays(1)
	e.today.Store(&day3)
	before = counted.records.Load()
	res, err = c.StartDayAt(t.Context(), slug, cal, imported.Version)
	if err != nil || !res.Direct || res.Events != 1 || res.Calendar.Today != day3 {
		t.Errorf("on a stale calendar: got %+v, %v, want one event appended on the last record's calendar", res, err)
	}
	if n := counted.records.Load() - before; n != 0 {
		t.Errorf("a day start on the last record's calendar read %d records, want none", n)
	}
	res, err = c.StartDayAt(t.Context(), slug, cal, imported.Version)
	if err != nil || res.Events != 0 {
		t.Errorf("on a stale calendar, the day already started: got %+v, %v, want nothing appended", res, err)
	}

	// A last record without a calendar, as older code wrote them: the establishment is loaded.
	envs, err := c.envelopes(slug, []domain.Event{domain.MenuRedirectChanged{Enabled: false}})
	if err != nil {
		t.Fatal(err)
	}
	last, err := e.store.LastSequence(t.Context(), string(slug))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Append(t.Context(), string(slug), last, "cmd-without-calendar", envs); err != nil {
		t.Fatal(err)
	}
	day4 := day3.AddDays(1)
	e.today.Store(&day4)
	res, err = c.StartDayAt(t.Context(), slug, cal, imported.Version)
	if err != nil || res.Direct || res.Events != 1 || res.Calendar.Today != day4 {
		t.Errorf("after a record without a calendar: got %+v, %v, want one event appended after a load", res, err)
	}
}

// PrepareDayAt appends the next day, starting at its local midnight, once the day is recorded,
// on the last record's calendar, never on an older one, never twice, and never loading the
// establishment; a day started then clears it from the calendar.
func TestPrepareDayAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, counted := e.commands(t, Config{})
	dep := dependentEstablishment(40)
	slug := domain.Slug(dep.Slug)
	imported := mustImport(t, c, dep)
	cal := Calendar{Zone: dep.TimeZone, Dependent: true, Today: testToday}
	day2 := testToday.AddDays(1)

	before := counted.records.Load()
	res, err := c.PrepareDayAt(t.Context(), slug, cal, imported.Version)
	if err != nil || !res.Direct || res.Events != 1 || res.Calendar.Ahead != day2 || res.Calendar.Today != testToday {
		t.Fatalf("on the last record's calendar: got %+v, %v, want %s prepared directly", res, err, day2)
	}
	if n := counted.records.Load() - before; n != 0 {
		t.Errorf("a direct preparation read %d records, want none", n)
	}
	recs, err := e.store.History(t.Context(), string(slug))
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	ev, err := domain.DecodeEvent(last.Events[0].Type, last.Events[0].SchemaVersion, last.Events[0].Payload)
	loc := (&domain.Establishment{TimeZone: dep.TimeZone}).Location()
	want := domain.DayAhead{Date: day2, Starts: time.Date(day2.Year, day2.Month, day2.Day, 0, 0, 0, 0, loc).UTC()}
	if got, ok := ev.(domain.DayAhead); err != nil || !ok || got.Date != want.Date || !got.Starts.Equal(want.Starts) {
		t.Errorf("appended %#v (%v), want %#v", ev, err, want)
	}
	if again, err := c.PrepareDayAt(t.Context(), slug, res.Calendar, res.Version); err != nil || again.Events != 0 {
		t.Errorf("prepared again: got %+v, %v, want nothing appended", again, err)
	}
	if stale, err := c.PrepareDayAt(t.Context(), slug, cal, imported.Version); err != nil || stale.Events != 0 {
		t.Errorf("on a stale calendar: got %+v, %v, want nothing appended", stale, err)
	}
	if n := counted.records.Load() - before; n != 0 {
		t.Errorf("preparations read %d records, want none", n)
	}

	// Once the clock moved on, nothing is prepared before the day is recorded; recorded, it
	// clears the day ahead from the calendar.
	e.today.Store(&day2)
	if res, err := c.PrepareDayAt(t.Context(), slug, res.Calendar, res.Version); err != nil || res.Events != 0 {
		t.Errorf("before the day is recorded: got %+v, %v, want nothing appended", res, err)
	}
	started, err := c.StartDay(t.Context(), slug)
	if err != nil || started.Events != 1 || started.Calendar.Today != day2 || !started.Calendar.Ahead.IsZero() {
		t.Errorf("day started: got %+v, %v, want %s recorded and no day ahead", started, err, day2)
	}
}

// A command that fails in any way once its events are applied to the state it loaded, a panic
// included, leaves no trace: the next command decides on what the log says.
func TestFailedCommandLeavesNoState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	var panicking atomic.Bool
	c, _ := e.commands(t, Config{CheckContent: func(*domain.Establishment, bool, int) error {
		if panicking.Load() {
			panic("check failed")
		}
		return nil
	}})
	s := establishment(30)
	slug := domain.Slug(s.Slug)
	mustImport(t, c, s)
	before, err := c.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	panicking.Store(true)
	func() {
		defer func() { _ = recover() }() // as the admin API's router recovers a handler
		_, _ = c.SetMenuRedirect(t.Context(), Request{Slug: slug}, !*before.Establishment.Settings.MenuRedirectEnabled)
	}()
	panicking.Store(false)
	after, err := c.Get(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	if *after.Establishment.Settings.MenuRedirectEnabled != *before.Establishment.Settings.MenuRedirectEnabled || after.Version != before.Version {
		t.Errorf("after a command that panicked: redirect %t at version %d, want %t at %d as in the log",
			*after.Establishment.Settings.MenuRedirectEnabled, after.Version, *before.Establishment.Settings.MenuRedirectEnabled, before.Version)
	}
}

// An establishment moved to a time zone behind its old one has, from the move on, the date of its
// new zone, though earlier than the day it had started; one moved ahead starts the later date.
func TestTimeZoneMoveStartsTheNewZonesDate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	// 10:30 UTC on 24 November: already the 25th at UTC+14, still the 23rd at UTC−11.
	now := time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC)
	c.clock = func(loc *time.Location) domain.LocalDate { return domain.DateOf(now.In(loc)) }
	dep := dependentEstablishment(10)
	for _, move := range []struct {
		zone, today string
		changed     bool
	}{
		{"Pacific/Kiritimati", "2026-11-25", true},
		{"Pacific/Pago_Pago", "2026-11-23", true},
		{"Europe/Paris", "2026-11-24", true},
		{"Europe/Paris", "2026-11-24", false}, // not moved: nothing to do
	} {
		dep.TimeZone = move.zone
		res := mustImport(t, c, dep)
		st, err := c.Get(t.Context(), domain.Slug(dep.Slug))
		if err != nil {
			t.Fatal(err)
		}
		if st.Today != move.today || st.Establishment.TimeZone != move.zone {
			t.Errorf("moved to %s: today %s in %s, want %s", move.zone, st.Today, st.Establishment.TimeZone, move.today)
		}
		if changed := res.Events > 0; changed != move.changed {
			t.Errorf("moved to %s: %d events appended, want some: %t", move.zone, res.Events, move.changed)
		}
	}
}
