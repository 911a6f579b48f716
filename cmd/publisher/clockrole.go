package main

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/clock"
	"github.com/opencarte/publisher/domain"
)

// startClock starts the clock role, which starts the establishments' days.
func (m *Main) startClock(ctx context.Context) error {
	c := &m.Config
	index, err := provision(ctx, m, "the calendar index", func(ctx context.Context) (*clock.Index, error) {
		return clock.OpenIndex(ctx, m.Conn, c.Replicas)
	})
	if err != nil {
		return fmt.Errorf("open calendar index: %w", err)
	}
	m.ClockRole, err = clock.New(clock.Config{
		Days: m.Commands, Log: m.Store, Index: index, Today: m.Clock.Today, Instant: m.Clock.Instant,
		Interval: c.ClockEvery, Logger: m.Logger.With("role", roleClock),
	})
	if err != nil {
		return err
	}
	m.metrics.Clock(m.ClockRole)
	m.loops.Go(roleClock, m.ClockRole.Run)
	return nil
}

// settableClock is the wall clock, shifted or not, unless a date is fixed. It is read on every
// lookup of an establishment whose next day is held ahead: it takes no lock.
type settableClock struct {
	fixed atomic.Pointer[domain.LocalDate] // nil while the calendar runs
	shift atomic.Int64                     // a time.Duration
}

// Set fixes the local date of every establishment; the zero date returns to the wall clock.
func (c *settableClock) Set(d domain.LocalDate) {
	if d.IsZero() {
		c.fixed.Store(nil)
		return
	}
	c.fixed.Store(&d)
}

// Shift moves the calendar by d from the wall clock: its days follow the wall clock's pace from
// that instant.
func (c *settableClock) Shift(d time.Duration) { c.shift.Store(int64(d)) }

// Now is the calendar's instant, were its date not fixed: the wall clock, shifted.
func (c *settableClock) Now() time.Time { return time.Now().Add(time.Duration(c.shift.Load())) }

// Instant is the calendar's instant, and false while a date is fixed: the calendar has none then,
// and no day is prepared ahead.
func (c *settableClock) Instant() (time.Time, bool) {
	if c.fixed.Load() != nil {
		return time.Time{}, false
	}
	return c.Now(), true
}

// Unix is the calendar's instant in Unix seconds, by which the read API serves a day held ahead
// from its start; while a date is fixed, the lowest value, before every start.
func (c *settableClock) Unix() int64 {
	t, ok := c.Instant()
	if !ok {
		return math.MinInt64
	}
	return t.Unix()
}

// Today is an app.Clock.
func (c *settableClock) Today(loc *time.Location) domain.LocalDate {
	if d := c.fixed.Load(); d != nil {
		return *d
	}
	return domain.DateOf(c.Now().In(loc))
}
