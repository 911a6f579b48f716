package app

import (
	"context"
	"errors"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

var (
	// ErrConflict means a command kept losing races with concurrent writers.
	ErrConflict = errors.New("concurrent modification, try again")

	// ErrTooLarge means a command would make the establishment's stored content larger than the
	// event log or the documents bucket accept.
	ErrTooLarge = errors.New("too large to store")

	// ErrIdempotencyKeyReused means an idempotency key already applied to a request was sent
	// again with the same method and path but another body.
	ErrIdempotencyKeyReused = errors.New("already used with a different body for this operation")

	// ErrInvalid wraps input refused for a reason that names no field of a document.
	ErrInvalid = errors.New("invalid")

	// ErrUnavailable means the event log or a store did not answer in time.
	ErrUnavailable = errors.New("the event log did not answer in time")

	// ErrStorageFull means the stores have too little room left for a write that grows them: it
	// is refused before it is made, and accepted again once room is made.
	ErrStorageFull = errors.New("insufficient storage")
)

// storageError is ErrStorageFull with what is short, in words an operator acts on.
type storageError struct {
	reason string
	err    error // the store's own refusal, if any
}

func (e *storageError) Error() string        { return ErrStorageFull.Error() + ": " + e.reason }
func (e *storageError) Is(target error) bool { return target == ErrStorageFull }
func (e *storageError) Unwrap() error        { return e.err }

// writeFailed returns why a write that grows the stores failed: an ErrStorageFull when the
// storage is short now (a volume that ran out between the reading a write was allowed on and the
// write, which then goes unanswered), else err as unavailable.
func (c *Commands) writeFailed(err error) error {
	if full := c.roomFor(); full != nil {
		return full
	}
	return unavailable(err)
}

// roomFor returns an ErrStorageFull when the storage has too little room for a write that grows
// it, nil otherwise.
func (c *Commands) roomFor() error {
	if c.room == nil {
		return nil
	}
	if reason, full := c.room(); full {
		return &storageError{reason: reason}
	}
	return nil
}

// Kind is the class of a refusal, which a transport maps to its own status.
type Kind int

// The kinds of refusal.
const (
	KindInternal            Kind = iota // not a refusal: a fault to log
	KindInvalid                         // bad input; FieldErrors names the fields when it can
	KindNotFound                        // the establishment, menu type, version or endpoint does not exist
	KindConflict                        // a transition that does not exist, or a race kept lost
	KindTooLarge                        // the content would not fit the stores
	KindUnavailable                     // a dependency did not answer; retrying may work
	KindUnsupported                     // content of a type that is not accepted
	KindInsufficientStorage             // the stores have too little room left; retrying once room is made works
)

// kinds is the one table from this package's and domain's errors to kinds: a new sentinel is a
// new row, never a new case in a handler. A transport passes the rows of the other packages it
// serves (the webhook registry's) to KindOf.
var kinds = []struct {
	target error
	kind   Kind
}{
	{ErrInvalid, KindInvalid},
	{ErrIdempotencyKeyReused, KindInvalid},
	{domain.ErrNotFound, KindNotFound},
	{domain.ErrMenuTypeNotFound, KindNotFound},
	{domain.ErrMenuVersionNotFound, KindNotFound},
	{domain.ErrInvalidTransition, KindConflict},
	{domain.ErrAPIDisabled, KindConflict},
	{ErrConflict, KindConflict},
	{ErrTooLarge, KindTooLarge},
	{domain.ErrFileTooLarge, KindTooLarge},
	{domain.ErrUnsupportedFile, KindUnsupported},
	{domain.ErrMalformedFile, KindInvalid},
	{ErrStorageFull, KindInsufficientStorage},
	{events.ErrStorageFull, KindInsufficientStorage},
	{ErrFilesUnavailable, KindUnavailable},
	{ErrUnavailable, KindUnavailable},
	{context.DeadlineExceeded, KindUnavailable},
	{context.Canceled, KindUnavailable},
}

// KindOf returns the kind of err: KindInvalid for field errors, the kind of the first sentinel of
// the table that err matches, else KindInternal.
func KindOf(err error, extra ...KindRule) Kind {
	if len(domain.FieldErrors(err)) > 0 {
		return KindInvalid
	}
	for _, r := range extra {
		if errors.Is(err, r.Target) {
			return r.Kind
		}
	}
	for _, k := range kinds {
		if errors.Is(err, k.target) {
			return k.kind
		}
	}
	return KindInternal
}

// KindRule gives the kind of the errors matching Target, for sentinels of other packages.
type KindRule struct {
	Target error
	Kind   Kind
}
