package app

import (
	"fmt"
	"strings"

	"github.com/opencarte/publisher/domain"
)

// CalendarHeader is the record header that holds the Calendar of the establishment after the
// record.
const CalendarHeader = "Publisher-Calendar"

// Calendar is what the clock needs to know of an establishment: its time zone, whether its public
// documents depend on the date, and the local date it last recorded.
type Calendar struct {
	Zone      string
	Dependent bool
	Today     domain.LocalDate // zero before any day was recorded
}

// CalendarOf returns the calendar of e.
func CalendarOf(e *domain.Establishment) Calendar {
	zone := e.TimeZone
	if zone == "" {
		zone = domain.DefaultTimeZone
	}
	return Calendar{Zone: zone, Dependent: e.Created && e.DateDependent(), Today: e.Today}
}

// String is the header form: "<zone> <0|1> <YYYY-MM-DD|->", such as "Europe/Paris 1 2026-11-24".
func (c Calendar) String() string {
	dep, today := "0", "-"
	if c.Dependent {
		dep = "1"
	}
	if !c.Today.IsZero() {
		today = c.Today.String()
	}
	return c.Zone + " " + dep + " " + today
}

// ParseCalendar reads the header form of a calendar.
func ParseCalendar(s string) (Calendar, error) {
	f := strings.Fields(s)
	if len(f) != 3 || (f[1] != "0" && f[1] != "1") {
		return Calendar{}, fmt.Errorf("calendar %q: want <zone> <0|1> <date|->", s)
	}
	c := Calendar{Zone: f[0], Dependent: f[1] == "1"}
	if f[2] != "-" {
		d, err := domain.ParseLocalDate(f[2])
		if err != nil {
			return Calendar{}, fmt.Errorf("calendar %q: %w", s, err)
		}
		c.Today = d
	}
	return c, nil
}
