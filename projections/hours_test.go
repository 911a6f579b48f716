package projections

import (
	"bytes"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
)

func TestSummary(t *testing.T) {
	days := []string{"lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"}
	every := func(tb testing.TB, open, close string) []domain.OpeningRange {
		var out []domain.OpeningRange
		for _, d := range days {
			out = append(out, fixture.Range(tb, d, open, d, close))
		}
		return out
	}
	tests := []struct {
		name   string
		ranges []domain.OpeningRange
		want   string // "" for null
	}{
		{"no ranges", nil, ""},
		{"one day", []domain.OpeningRange{fixture.Range(t, "mardi", "12:00", "mardi", "14:30")},
			"Mardi : 12:00-14:30 ; lundi et du mercredi au dimanche : fermé"},
		{"every day the same", every(t, "08:00", "20:00"), "Tous les jours : 08:00-20:00"},
		{"demo week", []domain.OpeningRange{
			fixture.Range(t, "samedi", "19:00", "dimanche", "00:30"),
			fixture.Range(t, "mardi", "19:00", "mardi", "22:30"),
			fixture.Range(t, "mardi", "12:00", "mardi", "14:30"),
			fixture.Range(t, "mercredi", "12:00", "mercredi", "14:30"),
			fixture.Range(t, "mercredi", "19:00", "mercredi", "22:30"),
			fixture.Range(t, "jeudi", "12:00", "jeudi", "14:30"),
			fixture.Range(t, "jeudi", "19:00", "jeudi", "22:30"),
			fixture.Range(t, "vendredi", "12:00", "vendredi", "14:30"),
			fixture.Range(t, "vendredi", "19:00", "samedi", "00:30"),
		}, "Du mardi au jeudi : 12:00-14:30, 19:00-22:30 ; vendredi : 12:00-14:30, 19:00-00:30 ; samedi : 19:00-00:30 ; lundi et dimanche : fermé"},
		{"two consecutive days", []domain.OpeningRange{
			fixture.Range(t, "samedi", "10:00", "samedi", "18:00"),
			fixture.Range(t, "dimanche", "10:00", "dimanche", "18:00"),
		}, "Samedi et dimanche : 10:00-18:00 ; du lundi au vendredi : fermé"},
		{"same ranges apart are separate groups", []domain.OpeningRange{
			fixture.Range(t, "lundi", "09:00", "lundi", "17:00"),
			fixture.Range(t, "mercredi", "09:00", "mercredi", "17:00"),
			fixture.Range(t, "vendredi", "09:00", "vendredi", "17:00"),
		}, "Lundi : 09:00-17:00 ; mercredi : 09:00-17:00 ; vendredi : 09:00-17:00 ; mardi, jeudi, samedi et dimanche : fermé"},
		{"overnight range", []domain.OpeningRange{
			fixture.Range(t, "vendredi", "22:00", "samedi", "02:00"),
			fixture.Range(t, "dimanche", "22:00", "lundi", "02:00"),
		}, "Vendredi : 22:00-02:00 ; dimanche : 22:00-02:00 ; du lundi au jeudi et samedi : fermé"},
		{"range over two nights names its closing day", []domain.OpeningRange{
			fixture.Range(t, "vendredi", "22:00", "dimanche", "06:00"),
		}, "Vendredi : 22:00-dimanche 06:00 ; du lundi au jeudi, samedi et dimanche : fermé"},
		{"no closing time", []domain.OpeningRange{
			fixture.Range(t, "dimanche", "11:00", "-", "-"),
			fixture.Range(t, "samedi", "19:00", "samedi", "-"),
		}, "Samedi : à partir de 19:00 ; dimanche : à partir de 11:00 ; du lundi au vendredi : fermé"},
		{"no closing day", []domain.OpeningRange{fixture.Range(t, "lundi", "07:00", "-", "12:00")},
			"Lundi : 07:00-12:00 ; du mardi au dimanche : fermé"},
		{"ranges of a day by opening time", []domain.OpeningRange{
			fixture.Range(t, "jeudi", "19:00", "jeudi", "23:00"),
			fixture.Range(t, "jeudi", "07:30", "jeudi", "10:00"),
			fixture.Range(t, "jeudi", "12:00", "jeudi", "14:00"),
		}, "Jeudi : 07:30-10:00, 12:00-14:00, 19:00-23:00 ; du lundi au mercredi et du vendredi au dimanche : fermé"},
		{"six days open", []domain.OpeningRange{
			fixture.Range(t, "mardi", "09:00", "mardi", "19:00"),
			fixture.Range(t, "mercredi", "09:00", "mercredi", "19:00"),
			fixture.Range(t, "jeudi", "09:00", "jeudi", "19:00"),
			fixture.Range(t, "vendredi", "09:00", "vendredi", "19:00"),
			fixture.Range(t, "samedi", "09:00", "samedi", "19:00"),
			fixture.Range(t, "dimanche", "09:00", "dimanche", "13:00"),
		}, "Du mardi au samedi : 09:00-19:00 ; dimanche : 09:00-13:00 ; lundi : fermé"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Summary(tc.ranges)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("got %q, want null", *got)
			case tc.want != "" && got == nil:
				t.Errorf("got null, want %q", tc.want)
			case got != nil && *got != tc.want:
				t.Errorf("got  %q\nwant %q", *got, tc.want)
			}
		})
	}
}

func TestBusinessHoursOrder(t *testing.T) {
	e := &domain.Establishment{Slug: "x", Created: true, Status: domain.StatusActive, Identity: domain.Identity{Name: "X"}}
	e.Hours.Ranges = []domain.OpeningRange{
		fixture.Range(t, "dimanche", "10:00", "dimanche", "12:00"),
		fixture.Range(t, "lundi", "19:00", "lundi", "22:00"),
		fixture.Range(t, "lundi", "12:00", "lundi", "14:00"),
	}
	want := `"business_hours":[{"open_day":"lundi","open_time":"12:00","close_day":"lundi","close_time":"14:00"},` +
		`{"open_day":"lundi","open_time":"19:00","close_day":"lundi","close_time":"22:00"},` +
		`{"open_day":"dimanche","open_time":"10:00","close_day":"dimanche","close_time":"12:00"}]`
	if got := Render(e, 1).Hours.Body; !bytes.Contains(got, []byte(want)) {
		t.Errorf("got %s\nwant it to contain %s", got, want)
	}
}

func TestSpecialHoursComing(t *testing.T) {
	closed := func(start, end string) domain.SpecialHours {
		s := domain.SpecialHours{StartDate: fixture.Date(t, start), Closed: true}
		if end != "" {
			s.EndDate = datePtr(t, end)
		}
		return s
	}
	e := &domain.Establishment{Slug: "x", Created: true, Status: domain.StatusActive, Identity: domain.Identity{Name: "X"}, Today: fixture.Date(t, "2026-11-18")}
	e.SpecialHours = []domain.SpecialHours{
		closed("2026-12-25", "2026-12-25"), // one day, its end given as its start: no end_date
		closed("2026-11-17", ""),           // yesterday: gone
		closed("2026-11-10", "2026-11-18"), // ends today: kept
		closed("2026-11-18", ""),           // today: kept
		closed("2026-11-01", "2026-11-17"), // ended yesterday: gone
	}
	want := `"special_hours_coming":[` +
		`{"start_date":"2026-11-10","end_date":"2026-11-18","open_time":null,"close_time":null,"closed":true},` +
		`{"start_date":"2026-11-18","end_date":null,"open_time":null,"close_time":null,"closed":true},` +
		`{"start_date":"2026-12-25","end_date":null,"open_time":null,"close_time":null,"closed":true}]}`
	if got := Render(e, 1).Hours.Body; !bytes.HasSuffix(got, []byte(want)) {
		t.Errorf("got %s\nwant it to end with %s", got, want)
	}
}
