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
// documents depend on the date, the local date it last recorded and the next one it prepared.
type Calendar struct {
	Zone      string
	Dependent bool
	Today     domain.LocalDate // zero before any day was recorded
	Ahead     domain.LocalDate // zero when no next day is prepared
}

// CalendarOf returns the calendar of e.
func CalendarOf(e *domain.Establishment) Calendar {
	zone := e.TimeZone
	if zone == "" {
		zone = domain.DefaultTimeZone
	}
	return Calendar{Zone: zone, Dependent: e.Created && e.DateDependent(), Today: e.Today, Ahead: e.Ahead}
}

// after returns c once ev, an event of the calendar, is applied, by the aggregate's own rules.
func (c Calendar) after(ev domain.Event) Calendar {
	e := domain.Establishment{TimeZone: c.Zone, Today: c.Today, Ahead: c.Ahead}
	e.Apply(ev)
	c.Today, c.Ahead = e.Today, e.Ahead
	return c
}

// String is the header form: "<zone> <0|1> <YYYY-MM-DD|->", such as "Europe/Paris 1 2026-11-24",
// followed by " <YYYY-MM-DD>", the day ahead, when one is prepared.
func (c Calendar) String() string {
	dep, today := "0", "-"
	if c.Dependent {
		dep = "1"
	}
	if !c.Today.IsZero() {
		today = c.Today.String()
	}
	s := c.Zone + " " + dep + " " + today
	if !c.Ahead.IsZero() {
		s += " " + c.Ahead.String()
	}
	return s
}

// ParseCalendar reads the header form of a calendar.
func ParseCalendar(s string) (Calendar, error) {
	f := strings.Fields(s)
	if len(f) != 3 && len(f) != 4 || (f[1] != "0" && f[1] != "1") {
		return Calendar{}, fmt.Errorf("calendar %q: want <zone> <0|1> <date|-> [<date>]", s)
	}
	c := Calendar{Zone: f[0], Dependent: f[1] == "1"}
	if f[2] != "-" {
		d, err := domain.ParseLocalDate(f[2])
		if err != nil {
			return Calendar{}, fmt.Errorf("calendar %q: %w", s, err)
		}
		c.Today = d
	}
	if len(f) == 4 {
		d, err := domain.ParseLocalDate(f[3])
		if err != nil {
			return Calendar{}, fmt.Errorf("calendar %q: %w", s, err)
		}
		c.Ahead = d
	}
	return c, nil
}
