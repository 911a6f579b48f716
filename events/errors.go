package events

import "errors"

var (
	// ErrConflict reports that the establishment's subject has moved past the expected last
	// sequence: another command was appended first. The caller replays the history and retries,
	// or reports a conflict.
	ErrConflict = errors.New("events: conflict")

	// ErrDuplicate reports that a record with the same command id is already stored. Append
	// returns it together with the sequence of the stored record, so a caller can treat a replayed
	// command as already applied.
	ErrDuplicate = errors.New("events: duplicate command")

	// ErrInvalidSlug reports an establishment slug that cannot be a subject token.
	ErrInvalidSlug = errors.New("events: invalid slug")

	// ErrInvalidRecord reports a record that breaks the storage format: Encode refuses to write
	// it and Decode refuses to read it.
	ErrInvalidRecord = errors.New("events: invalid record")

	// ErrRecordTooLarge reports a record larger than the NATS connection's maximum payload:
	// Append refuses it before sending, and nothing is stored.
	ErrRecordTooLarge = errors.New("events: record too large")
)
