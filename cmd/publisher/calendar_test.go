package main

import (
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
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
