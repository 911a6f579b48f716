package main

import (
	"context"
	"time"
	_ "time/tzdata" // the zone's midnight, whatever the machine's time zone database
)

// midnightZone is the zone whose midnight the benchmark watches: half the generated
// establishments are in it.
const midnightZone = "Europe/Paris"

// midnightLead is how long before midnight in midnightZone the service's calendar starts: long
// enough for the zones already on the next day at that instant (Tokyo, Sydney) to have their days
// started first.
const midnightLead = 3 * time.Minute

// midnight restarts the service on a calendar (--calendar-from) midnightLead before the midnight
// that ends the day of the day change in midnightZone, and measures, in the running process,
// when the date-dependent establishments of that zone serve their new day.
func (b *bench) midnight(ctx context.Context) error {
	step("a day change at midnight in " + midnightZone + ", without a restart")
	loc, err := time.LoadLocation(midnightZone)
	if err != nil {
		return err
	}
	svc, next := b.svc, b.next.AddDays(1)
	at := time.Date(next.Year, next.Month, next.Day, 0, 0, 0, 0, loc)
	var slugs []string
	for i, slug := range b.gen.dependentSlugs {
		if b.gen.dependentZones[i] == midnightZone {
			slugs = append(slugs, slug)
		}
	}
	svc.stop()
	svc.calendarFrom = at.Add(-midnightLead)
	defer func() { svc.calendarFrom = time.Time{} }()
	start := time.Now()
	if err := svc.start(ctx, b.next, "midnight"); err != nil {
		return err
	}
	ready := time.Since(start)
	// The service's calendar started as it prepared its start, a few milliseconds after start:
	// midnight, by the wall clock, is at most that much later than this.
	midnight := start.Add(midnightLead)
	// The zones past midnight at the restart have their days started and projected before it, or
	// the figure says they were not.
	before := "the zones already on the next day started and projected before it"
	restartDay, err := svc.waitDay(ctx, start, 0, time.Until(midnight))
	if err == nil {
		_, err = svc.waitProjected(ctx, time.Until(midnight))
	}
	if err != nil {
		before = "the zones already on the next day NOT started and projected before it"
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(midnight)):
	}
	day, err := svc.waitDay(ctx, midnight, len(slugs), 10*time.Minute)
	if err != nil {
		return err
	}
	projected, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	behind, err := svc.checkDay(ctx, slugs, next)
	if err != nil {
		return err
	}
	b.r.add("midnight in %s without a restart (the calendar started %s before it; ready in %s, %s, in %s): %d of %d date-dependent establishments of the zone on %s (%d not); their days started %s after midnight (%s), documents served %s after it; the process stayed up: %t",
		midnightZone, midnightLead, ready.Round(time.Millisecond), before, restartDay.took.Round(time.Millisecond), len(slugs)-behind, len(slugs), next, behind,
		day.took.Round(time.Millisecond), day.pass, projected.Sub(midnight).Round(time.Millisecond), svc.alive())
	return nil
}
