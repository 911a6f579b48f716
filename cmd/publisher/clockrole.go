package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
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
		Days: m.Commands, Log: m.Store, Index: index, Today: m.Clock.Today,
		Interval: c.ClockEvery, Logger: m.Logger.With("role", roleClock),
	})
	if err != nil {
		return err
	}
	m.metrics.Clock(m.ClockRole)
	m.loops.Go(roleClock, m.ClockRole.Run)
	return nil
}

// settableClock is the wall clock, shifted or not, unless a date is fixed.
type settableClock struct {
	mu    sync.Mutex
	fixed domain.LocalDate
	shift time.Duration
}

// Set fixes the local date of every establishment; the zero date returns to the wall clock.
func (c *settableClock) Set(d domain.LocalDate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = d
}

// Shift moves the calendar by d from the wall clock: its days follow the wall clock's pace from
// that instant.
func (c *settableClock) Shift(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shift = d
}

// Today is an app.Clock.
func (c *settableClock) Today(loc *time.Location) domain.LocalDate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() {
		return c.fixed
	}
	if c.shift != 0 {
		return domain.DateOf(time.Now().Add(c.shift).In(loc))
	}
	return app.WallClock(loc)
}
