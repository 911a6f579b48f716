package runner

import (
	"context"

	"github.com/opencarte/publisher/events"
)

// Log is the event log the projector reads, in the three ways it reads it; *events.Store
// satisfies it.
type Log interface {
	Replayer
	Follower
	History
}

// Replayer is what a replay of the whole log reads, and what Settle reads of a range of it.
type Replayer interface {
	// LastStreamSequence returns the sequence of the log's last record.
	LastStreamSequence(ctx context.Context) (uint64, error)
	// Slugs lists, sorted, the establishments with at least one record.
	Slugs(ctx context.Context) ([]string, error)
	// ReplayPart calls fn for every record from sequence from through to whose establishment
	// keep accepts, and unreadable for every such message that is not a readable record; other,
	// unless nil, receives every other message as stored, for events.DecodeRecord.
	ReplayPart(ctx context.Context, from, to uint64, keep func(slug string) bool, fn func(events.Record) error, other func(slug string, seq uint64, data []byte) error, unreadable func(seq uint64, err error)) error
}

// Follower is what the projector reads of the log once it caught up.
type Follower interface {
	// Identity tells this log apart from any other, one restored from a backup say.
	Identity(ctx context.Context) (string, error)
	// Follow calls fn for every record from sequence from, stored or to come, until ctx is done.
	Follow(ctx context.Context, from uint64, fn func(events.Record) error) error
}

// History is what the projector reads of the records of one establishment: those an
// establishment loaded from its saved state has yet to take in, and those Settle renders again.
type History interface {
	// Before returns the records of one establishment from sequence from up to, not including,
	// its record at sequence before, oldest first, and passes to unreadable every message of
	// its that is not a readable record.
	Before(ctx context.Context, slug string, from, before uint64, unreadable func(seq uint64, err error)) ([]events.Record, error)
	// Chain returns the records of one establishment after sequence after through its record at
	// last, oldest first, each read through the one the next says it follows; ok is false when
	// they cannot be read so, and Before is to be asked.
	Chain(ctx context.Context, slug string, after, last uint64) (recs []events.Record, ok bool, err error)
	// Range returns the records of one establishment from sequence from through to, which must
	// be the sequence of one of its records, oldest first.
	Range(ctx context.Context, slug string, from, to uint64) ([]events.Record, error)
}
