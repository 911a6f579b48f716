package app

import (
	"testing"

	"github.com/opencarte/publisher/domain"
)

// The header form of a calendar reads back to the same calendar, with or without a day ahead;
// a malformed one is refused.
func TestCalendarHeader(t *testing.T) {
	t.Parallel()
	day := domain.LocalDate{Year: 2026, Month: 11, Day: 24}
	for _, c := range []Calendar{
		{Zone: "Europe/Paris"},
		{Zone: "Europe/Paris", Dependent: true, Today: day},
		{Zone: "Asia/Tokyo", Dependent: true, Today: day, Ahead: day.AddDays(1)},
	} {
		got, err := ParseCalendar(c.String())
		if err != nil || got != c {
			t.Errorf("%q: read back %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	if s := (Calendar{Zone: "Asia/Tokyo", Dependent: true, Today: day, Ahead: day.AddDays(1)}).String(); s != "Asia/Tokyo 1 2026-11-24 2026-11-25" {
		t.Errorf("header form %q", s)
	}
	for _, s := range []string{"", "Europe/Paris", "Europe/Paris 2 -", "Europe/Paris 1 2026-11-24 tomorrow", "Europe/Paris 1 - - -"} {
		if c, err := ParseCalendar(s); err == nil {
			t.Errorf("%q: read %+v, want an error", s, c)
		}
	}
}
