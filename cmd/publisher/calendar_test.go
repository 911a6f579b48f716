package main

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
)

// --calendar-from runs the calendar from the instant given, at the wall clock's pace: the local
// date of an establishment moves at its local midnight of that calendar.
func TestCalendarFromRunsTheCalendar(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 25, 0, 0, 0, 0, paris)
	m := &Main{Config: Config{Replicas: 1, CalendarFrom: midnight.Add(-2 * time.Second).Format(time.RFC3339Nano)}}
	if err := m.prepare(); err != nil {
		t.Fatal(err)
	}
	before, after := domain.LocalDate{Year: 2026, Month: 11, Day: 24}, domain.LocalDate{Year: 2026, Month: 11, Day: 25}
	if got := m.Clock.Today(paris); got != before {
		t.Fatalf("two seconds before midnight in Paris: got %s, want %s", got, before)
	}
	// Tokyo is eight hours ahead: its day has started already.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Clock.Today(tokyo); got != after {
		t.Errorf("in Tokyo: got %s, want %s", got, after)
	}
	deadline := time.Now().Add(time.Minute)
	for m.Clock.Today(paris) != after {
		if time.Now().After(deadline) {
			t.Fatalf("a minute later, Paris is still on %s", m.Clock.Today(paris))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --calendar-from takes an RFC 3339 instant, and not with --today.
func TestCalendarFromRefusals(t *testing.T) {
	for _, tc := range []struct {
		today, from, want string
	}{
		{"2026-11-24", "2026-11-24T23:58:00+01:00", "give one or the other"},
		{"", "2026-11-24 23:58", "--calendar-from: want an RFC 3339 instant"},
	} {
		m := &Main{Config: Config{Replicas: 1, Today: tc.today, CalendarFrom: tc.from}}
		if err := m.prepare(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--today %q --calendar-from %q: got %v, want an error with %q", tc.today, tc.from, err, tc.want)
		}
	}
}

// The next day of a date-dependent establishment is prepared before its midnight and served from
// it, before the day-started event is even appended; that event then keeps the same revision and
// bytes.
func TestNextDayIsServedFromMidnight(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 23, 0, 0, 0, 0, paris)
	m := openMain(t, t.TempDir(), "", func(c *Config) { c.CalendarFrom = midnight.Add(-10 * time.Second).Format(time.RFC3339) })
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	eventually(t, "demo served", func() bool { return m.get(t, est, key).status == 200 })
	today := m.get(t, est+"/menus/menu-du-jour", key)
	if !bytes.Contains(today.body, []byte("Poireaux vinaigrette")) {
		t.Fatalf("menu du jour before midnight: %s", today.body)
	}

	js := m.jetStream(t)
	docs, err := js.KeyValue(t.Context(), dockey.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	var ahead dockey.Bundle
	eventually(t, "next day prepared", func() bool {
		if _, err := m.ClockRole.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		e, err := docs.Get(t.Context(), dockey.AheadKey("chez-marcel"))
		return err == nil && dockey.Decode(e.Value(), &ahead) == nil
	})
	if ahead.Starts != midnight.Unix() || ahead.Base != today.revision(t) || ahead.Revision <= ahead.Base {
		t.Fatalf("day ahead: revision %d over %d from %d, want above %d from %d", ahead.Revision, ahead.Base, ahead.Starts, today.revision(t), midnight.Unix())
	}
	if m.Clock.Now().After(midnight) {
		t.Fatal("the next day was prepared after midnight: the test says nothing")
	}

	var next reply
	eventually(t, "next day served", func() bool {
		next = m.get(t, est+"/menus/menu-du-jour", key)
		return bytes.Contains(next.body, []byte("Céleri rémoulade"))
	})
	if next.revision(t) != ahead.Revision {
		t.Errorf("served at midnight at revision %d, want the day ahead's %d", next.revision(t), ahead.Revision)
	}
	last, _, err := m.Store.Last(t.Context(), "chez-marcel")
	if err != nil || last.Events[0].Type != domain.TypeDayAhead {
		t.Fatalf("last record: %+v, %v; want the day ahead, the day not started yet", last.Events, err)
	}

	// The day started, the same bytes at the same revision.
	if _, err := m.ClockRole.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	started, err := m.Store.LastSequence(t.Context(), "chez-marcel")
	if err != nil || started == last.Sequence {
		t.Fatalf("no day started after midnight (%v)", err)
	}
	if err := m.Projector().WaitFor(t.Context(), started); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Get(t.Context(), dockey.AheadKey("chez-marcel")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the day ahead once the day started: %v, want it removed", err)
	}
	if got := m.get(t, est+"/menus/menu-du-jour", key); got.revision(t) != ahead.Revision || !bytes.Equal(got.body, next.body) {
		t.Errorf("once the day started: revision %d, want %d with the same bytes", got.revision(t), ahead.Revision)
	}
}

// A fixed date (--today) leaves the calendar without an instant: no day is prepared ahead, and
// none held is served; the date unfixed, the wall clock's instant is back.
func TestFixedDateHasNoInstant(t *testing.T) {
	m := &Main{Config: Config{Replicas: 1, Today: "2026-11-24"}}
	if err := m.prepare(); err != nil {
		t.Fatal(err)
	}
	if at, ok := m.Clock.Instant(); ok || m.Clock.Unix() != math.MinInt64 {
		t.Errorf("on a fixed date: instant %v %t, unix %d; want none", at, ok, m.Clock.Unix())
	}
	m.Clock.Set(domain.LocalDate{})
	before := time.Now()
	if at, ok := m.Clock.Instant(); !ok || at.Before(before) || at.After(time.Now()) {
		t.Errorf("on the wall clock: instant %v %t, want now", at, ok)
	}
}
