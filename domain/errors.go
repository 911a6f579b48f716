package domain

import (
	"errors"
	"fmt"
)

// Sentinel errors a caller branches on. They are returned wrapped; match them with errors.Is.
var (
	// ErrNotFound means the establishment has no events yet.
	ErrNotFound = errors.New("domain: establishment not found")
	// ErrAlreadyExists means a creation was asked for an establishment that exists.
	ErrAlreadyExists = errors.New("domain: establishment already exists")
	// ErrMenuTypeNotFound means the menu type slug is not defined for the establishment.
	ErrMenuTypeNotFound = errors.New("domain: menu type not found")
	// ErrMenuVersionNotFound means the menu type has no version with that id.
	ErrMenuVersionNotFound = errors.New("domain: menu version not found")
	// ErrAPIDisabled means the command needs the public API to be enabled.
	ErrAPIDisabled = errors.New("domain: public api is not enabled")
	// ErrInvalidTransition means the command asks for a state change the lifecycle does not have.
	ErrInvalidTransition = errors.New("domain: invalid state transition")
)

// FieldError is a rejected input value. Field is the path of the value in the request body, in
// the notation of the import format (for example "menu_types[0].versions[1].items[2].price").
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// MaxFieldErrors is the most field errors one rejection names. A check that finds more keeps the
// first MaxFieldErrors and counts the others, without their paths, until it has found 10,000 in
// all; there it stops looking. A body of millions of bad elements then costs a few kilobytes of
// errors and the check of its first elements, not an error for each element.
const MaxFieldErrors = 100

// maxCountedFieldErrors is where a check stops looking. Counting costs next to nothing, so a
// rejection of a few hundred or thousand bad fields still says exactly how many it left out;
// past this, where only hostile input goes, it says "at least".
const maxCountedFieldErrors = 10_000

// MoreFieldErrors stands for the field errors a rejection found beyond the MaxFieldErrors it
// names: it is joined after them.
type MoreFieldErrors struct {
	// Count is how many were found and left out.
	Count int
	// AtLeast says the check stopped looking: there may be more.
	AtLeast bool
}

func (e *MoreFieldErrors) Error() string {
	if e.AtLeast {
		return fmt.Sprintf("and at least %d more field errors", e.Count)
	}
	return fmt.Sprintf("and %d more field errors", e.Count)
}

// FieldErrorList collects the rejected fields of one check (a decoding, a command) so that all are
// reported at once, within the bounds of MaxFieldErrors. The zero value is an empty list.
type FieldErrorList struct {
	named []error // the first MaxFieldErrors errors
	more  int     // errors found after those
}

// Add adds err, a *FieldError or another failure of the check, unless it is nil. Past
// MaxFieldErrors it is counted, not kept.
func (fe *FieldErrorList) Add(err error) {
	switch {
	case err == nil:
	case fe.Naming():
		fe.named = append(fe.named, err)
	default:
		fe.more++
	}
}

func (fe *FieldErrorList) add(field, format string, args ...any) {
	if !fe.Naming() {
		fe.more++ // no reason formatted: nobody reads it
		return
	}
	fe.named = append(fe.named, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// Naming reports whether the next error added is kept. Once it is not, a check need not build
// the path of what it rejects: only the count is kept.
func (fe *FieldErrorList) Naming() bool { return len(fe.named) < MaxFieldErrors }

// Full reports whether the list counted as far as it counts: the check should stop looking.
func (fe *FieldErrorList) Full() bool { return len(fe.named)+fe.more >= maxCountedFieldErrors }

// Err returns the errors added, joined, followed by a *MoreFieldErrors when some were left out;
// nil when none were added.
func (fe *FieldErrorList) Err() error {
	if fe.more == 0 {
		return errors.Join(fe.named...)
	}
	return errors.Join(append(fe.named[:len(fe.named):len(fe.named)], &MoreFieldErrors{Count: fe.more, AtLeast: fe.Full()})...)
}

// FieldErrors returns every *FieldError inside err, in order.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		switch u := err.(type) {
		case *FieldError:
			out = append(out, u)
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
