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
	KindUnavailable                     // the event log or a store did not answer; retrying may work
	KindUnsupported                     // content of a type that is not accepted
	KindInsufficientStorage             // the stores have too little room left; retrying once room is made works
	KindDeclined                        // this process cannot do it now, and says why: no file store, a host that does not resolve
	KindGone                            // a position no longer kept: the client starts over
	KindForbidden                       // the credential's scope does not cover the request

	// The kinds of a transport's refusals of a request it could not read, before any command.

	KindMalformed    // the request cannot be read: bad JSON, an unknown member, a bad header, a body cut off
	KindBodyTooLarge // the request's body is over the transport's bound
	KindTimeout      // the request's body came too slowly
)

// kinds is the one table from the errors of this package, domain and events to kinds: a new
// sentinel is a new row, never a new case in a handler. The refusals of a package this one does
// not import (the webhook dispatcher's) are given their kinds where it is wired in, by Classify
// with that package's rows.
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
	{ErrFilesUnavailable, KindDeclined},
	{ErrUnavailable, KindUnavailable},
	{context.DeadlineExceeded, KindUnavailable},
	{context.Canceled, KindUnavailable},
}

// KindOf returns the kind of err: the kind of the first *Refusal in its chain, else KindInvalid for
// field errors, else the kind of the first sentinel of extra then of the table that err matches,
// else KindInternal.
func KindOf(err error, extra ...KindRule) Kind {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r.Kind
	}
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

// Refusal is an error with the kind its maker gave it, which KindOf honours before anything else:
// a refusal of a package this one does not import, given its kind where that package is wired in
// (see Classify), or a transport's own refusal of a request it could not read. Its text is its
// error's.
type Refusal struct {
	Kind Kind
	Err  error
}

func (e *Refusal) Error() string { return e.Err.Error() }
func (e *Refusal) Unwrap() error { return e.Err }

// Classify returns err as a *Refusal of the kind of the first rule whose target it matches, or
// err itself when it matches none.
func Classify(err error, rules ...KindRule) error {
	if err == nil {
		return nil
	}
	for _, r := range rules {
		if errors.Is(err, r.Target) {
			return &Refusal{Kind: r.Kind, Err: err}
		}
	}
	return err
}
