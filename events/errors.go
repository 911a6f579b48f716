package events

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

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

	// ErrStorageFull reports a write JetStream refused for lack of storage: its store is at its
	// limit, or the account's. Nothing was stored; the write may succeed once room is made.
	ErrStorageFull = errors.New("events: no storage left")
)

// JetStream's refusals for lack of storage: past the server's store limit, past the account's,
// and a write refused while the server is past its limits.
const (
	codeStorageExceeded          jetstream.ErrorCode = 10047
	codeAccountResourcesExceeded jetstream.ErrorCode = 10002
	codeInsufficientResources    jetstream.ErrorCode = 10023
)

// StorageFull marks err with ErrStorageFull when JetStream refused the write for lack of
// storage, and returns it as it is otherwise: for the writes of other packages to JetStream.
func StorageFull(err error) error {
	if hasCode(err, codeStorageExceeded, codeAccountResourcesExceeded, codeInsufficientResources) {
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	}
	return err
}
