package app

import (
	"context"
	"errors"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// DayResult is the outcome of StartDay, StartDayAt and PrepareDayAt.
type DayResult struct {
	Result
	// Calendar is the establishment's calendar after the command; Result.Version is the record it
	// is as of.
	Calendar Calendar
	// Direct says the command decided on a calendar, the caller's or its last record's, without
	// loading the establishment: the clock's index learns the result from the record's header.
	Direct bool
}

// StartDay records the establishment's local date, per the clock, when its public documents
// depend on the date and the date moved since it last recorded one: it appends one day-started
// event, or nothing. Its content is not checked: the calendar moves whatever it holds.
func (c *Commands) StartDay(ctx context.Context, slug domain.Slug) (DayResult, error) {
	var cal Calendar
	res, err := c.execute(ctx, Request{Slug: slug}, clockCommand, func(e *domain.Establishment) ([]domain.Event, error) {
		if !e.Created {
			return nil, domain.ErrNotFound
		}
		cal = CalendarOf(e)
		if !cal.Dependent {
			return nil, nil
		}
		evs, err := e.StartDay(c.clock(e.Location()))
		if len(evs) > 0 {
			cal = cal.after(evs[0])
		}
		return evs, err
	})
	return DayResult{Result: res, Calendar: cal}, err
}

// StartDayAt starts the day of slug knowing its calendar cal as of its record seq, as the clock's
// index holds it. While seq is still the establishment's last record, cal is exactly what the
// establishment says, so the decision is StartDay's own: the day-started event is appended on the
// expectation of seq, without loading the establishment (one request). When a record came after
// seq, the append is refused and the calendar of the last record, in its header, decides the
// same way; only when that one moved on too, or says nothing, does StartDay decide on the loaded
// state.
func (c *Commands) StartDayAt(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, error) {
	if seq > 0 && cal.Dependent {
		res, done, err := c.onLastCalendar(ctx, slug, cal, seq, c.startDayDirect)
		if done || err != nil {
			return res, err
		}
	}
	return c.StartDay(ctx, slug)
}

// startDayDirect appends the day-started event of slug on the expectation of seq, when its
// calendar cal depends on the date. done is false when the log moved past seq.
func (c *Commands) startDayDirect(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, bool, error) {
	if !cal.Dependent {
		// Read from the last record: the index learns it from the result.
		return DayResult{Result: Result{Slug: slug, Version: seq}, Calendar: cal}, true, nil
	}
	e := domain.Establishment{TimeZone: cal.Zone}
	date := c.clock(e.Location())
	if !cal.Today.IsZero() && !cal.Today.Before(date) {
		return DayResult{Result: Result{Slug: slug, Version: seq}, Calendar: cal, Direct: true}, true, nil
	}
	day := domain.DayStarted{Date: date}
	return c.appendDirect(ctx, slug, seq, day, cal.after(day))
}

// PrepareDayAt prepares the next local day of slug, knowing its calendar cal as of its record
// seq, as the clock's index holds it: when its public documents depend on the date and today,
// per the clock, is its recorded day, it appends one day-ahead event for tomorrow, starting at
// its local midnight, on the expectation of seq, or on that of the last record with the calendar
// in its header when a record came after seq. It never loads the establishment: when the log
// moved on again, it appends nothing, and the clock's next pass decides.
func (c *Commands) PrepareDayAt(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, error) {
	res, done, err := c.onLastCalendar(ctx, slug, cal, seq, c.prepareDayDirect)
	if !done && err == nil {
		return DayResult{Result: Result{Slug: slug, Version: seq}, Calendar: cal, Direct: true}, nil
	}
	return res, err
}

// prepareDayDirect appends the day-ahead event of slug on the expectation of seq, when its
// calendar cal calls for one. done is false when the log moved past seq.
func (c *Commands) prepareDayDirect(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, bool, error) {
	today, next, starts := c.nextDay((&domain.Establishment{TimeZone: cal.Zone}).Location())
	if seq == 0 || !cal.Dependent || cal.Today != today || cal.Ahead == next {
		return DayResult{Result: Result{Slug: slug, Version: seq}, Calendar: cal, Direct: true}, true, nil
	}
	ahead := domain.DayAhead{Date: next, Starts: starts}
	return c.appendDirect(ctx, slug, seq, ahead, cal.after(ahead))
}

// onLastCalendar runs direct on cal as of seq and, when the log moved past seq, once more on the
// calendar of slug's last record, read from its header: one direct get, where loading the
// establishment reads its snapshot and records. done is false when neither could decide: the
// log moved on again, or the last record has no calendar that reads (older code wrote it).
func (c *Commands) onLastCalendar(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64,
	direct func(context.Context, domain.Slug, Calendar, uint64) (DayResult, bool, error)) (DayResult, bool, error) {
	res, done, err := direct(ctx, slug, cal, seq)
	if done || err != nil {
		return res, done, err
	}
	last, header, err := c.log.LastHeader(ctx, string(slug), CalendarHeader)
	if err != nil {
		return DayResult{}, false, unavailable(err)
	}
	cal, err = ParseCalendar(header)
	if last == 0 || err != nil {
		return DayResult{}, false, nil
	}
	return direct(ctx, slug, cal, last)
}

// nextDay returns today in loc, per the commands' clock, the day after, and the instant that
// day starts, in UTC as events record instants.
func (c *Commands) nextDay(loc *time.Location) (today, next domain.LocalDate, starts time.Time) {
	today = c.clock(loc)
	next = today.AddDays(1)
	return today, next, next.StartIn(loc).UTC()
}

// appendDirect appends ev, a calendar event of slug after which its calendar is after, on the
// expectation of seq. done is false when the log moved past seq.
func (c *Commands) appendDirect(ctx context.Context, slug domain.Slug, seq uint64, ev domain.Event, after Calendar) (DayResult, bool, error) {
	envs, err := c.envelopes(slug, []domain.Event{ev})
	if err != nil {
		return DayResult{}, false, err
	}
	id := NewID("cmd")
	defer c.locks.lock(slug)()
	v, err := c.log.Append(ctx, string(slug), seq, id, envs, events.WithHeader(CalendarHeader, after.String()))
	switch {
	case errors.Is(err, events.ErrConflict):
		return DayResult{}, false, nil
	case err != nil:
		return DayResult{}, false, unavailable(err)
	}
	// A cached state at seq follows; any other is stale now.
	if a, ok := c.repo.cache.Peek(slug); ok {
		c.repo.cache.Remove(slug)
		if a.version == seq {
			a.est.Apply(ev)
			a.version, a.commandID = v, id
			a.folded++
			c.repo.put(a)
		}
	}
	return DayResult{Result: Result{Slug: slug, Version: v, Events: 1}, Calendar: after, Direct: true}, true, nil
}
