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
	at := next.StartIn(loc)
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
	before := "the zones already on the next day started, and the next day of this one prepared, and projected before it"
	restartDay, err := svc.waitDay(ctx, start, 0, 0, time.Until(midnight))
	if err == nil {
		_, err = svc.waitProjected(ctx, time.Until(midnight))
	}
	if err != nil {
		before = "the zones already on the next day NOT started, or the next day of this one NOT prepared, and projected before it"
	}

	// Every establishment of the zone is read through the read API, in rounds, from before
	// midnight until its day change is projected: when each was first read with its new day's
	// documents is when a client would have seen them.
	zone, err := keysOf(b.file+".results", slugs)
	if err != nil {
		return err
	}
	watch := svc.watchServed(ctx, zone)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(midnight) - time.Second):
	}
	started, prepared, err := svc.clockDays(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(midnight)):
	}
	day, err := svc.waitDay(ctx, midnight, started, len(slugs), 10*time.Minute)
	if err != nil {
		return err
	}
	projected, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	served, early, err := watch.end(midnight)
	if err != nil {
		return err
	}
	behind, err := svc.checkDay(ctx, slugs, next)
	if err != nil {
		return err
	}
	b.r.add("midnight in %s without a restart (the calendar started %s before it; ready in %s, %s, in %s; %d next days prepared): %d of %d date-dependent establishments of the zone on %s (%d not); their days started %s after midnight (%s), projected %s after it; %d changed documents, read in %d rounds of at most %s (the first ended %s before midnight), served at their new revision %s after it at the latest, %s for half of them, %d before it; the process stayed up: %t",
		midnightZone, midnightLead, ready.Round(time.Millisecond), before, restartDay.took.Round(time.Millisecond), prepared, len(slugs)-behind, len(slugs), next, behind,
		day.took.Round(time.Millisecond), day.pass, projected.Sub(midnight).Round(time.Millisecond),
		len(served), watch.rounds, watch.took.Round(time.Millisecond), midnight.Sub(watch.firstRead).Round(time.Millisecond), quantile(served, 1), quantile(served, 0.5), early, svc.alive())
	return nil
}

// quantile returns the q quantile of sorted, 0 when it is empty, rounded to the millisecond.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))].Round(time.Millisecond)
}

// keysOf returns the establishments of slugs with their API keys, from the import's results.
func keysOf(results string, slugs []string) ([]keyed, error) {
	all, err := keys(results)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(slugs))
	for _, s := range slugs {
		want[s] = true
	}
	var out []keyed
	for _, k := range all {
		if want[k.slug] && k.key != "" {
			out = append(out, k)
		}
	}
	return out, nil
}
