package destination

import (
	"context"
	"fmt"
	"time"

	"github.com/opencarte/publisher/events"
)

// The states of a destination.
const (
	StatePaused  = "paused"  // paused by an operator: nothing is published until it resumes
	StateActive  = "active"  // its last attempt published, or none failed
	StateFailing = "failing" // its last attempt failed: it retries with backoff
)

// Status is a destination as operators see it: its registration without its credentials, where
// it stands and how it fares.
type Status struct {
	ID string `json:"id"`
	Spec
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	Counters
	// Syncing is true while the destination publishes every establishment's current state (it
	// started with "all", or after a gap).
	Syncing bool `json:"syncing"`
	// LagRecords counts the change signals not yet published; LagSeconds is the age of the oldest
	// of them (0 when none waits).
	LagRecords uint64  `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`

	position string
}

// Counters are how a destination fares: kept in its record, shown in its status.
type Counters struct {
	// Published counts the events the broker took; Failures the attempts that failed.
	Published       uint64    `json:"published"`
	Failures        uint64    `json:"failures"`
	LastError       string    `json:"last_error,omitempty"`
	LastErrorAt     time.Time `json:"last_error_at,omitzero"`
	LastPublishedAt time.Time `json:"last_published_at,omitzero"`
	// Gaps counts the times its position was older than the signals kept: it then published every
	// establishment's state again (a first sync). LastGapAt is the last time.
	Gaps      uint64    `json:"gaps"`
	LastGapAt time.Time `json:"last_gap_at,omitzero"`
}

func (r *record) status() Status {
	st := Status{ID: r.ID, Spec: r.Spec, State: StateActive, Created: r.Created, Counters: r.Counters, position: r.Position}
	switch {
	case r.Paused:
		st.State = StatePaused
	case !r.LastErrorAt.IsZero() && r.LastErrorAt.After(r.LastPublishedAt):
		st.State = StateFailing
	}
	st.Syncing = r.Position == ""
	if c, err := events.ParseCursor(r.Position); err == nil {
		st.Syncing = c.Sync
	}
	return st
}

// withLag returns st with its lag read from the change signals.
func (s *Store) withLag(ctx context.Context, st Status) (Status, error) {
	if st.position == "" {
		return st, nil // a first sync not started: syncing says so; no change is behind it yet
	}
	c, err := events.ParseCursor(st.position)
	if err != nil {
		return st, nil // a position no reader gave: the runner says so
	}
	after := c.Signal // during a first sync, the changes since it started
	n, oldest, err := s.signals.Backlog(ctx, after)
	if err != nil {
		return Status{}, fmt.Errorf("destination %s: lag: %w", st.ID, err)
	}
	st.LagRecords = n
	if !oldest.IsZero() {
		st.LagSeconds = max(s.now().Sub(oldest).Seconds(), 0)
	}
	return st, nil
}
