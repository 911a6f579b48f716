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

// fieldErrors collects every rejected field of one command so that all are reported at once.
type fieldErrors []error

func (fe *fieldErrors) add(field, format string, args ...any) {
	*fe = append(*fe, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (fe fieldErrors) err() error { return errors.Join(fe...) }

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
