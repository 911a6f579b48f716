package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/opencarte/publisher/domain"
)

// idempotentPrefix starts the command ids derived from an idempotency key: the prefix, a digest of
// the key's scope, a dot, and a digest of the request.
const idempotentPrefix = "idem_"

// IdempotencyWindow is how long the service remembers the idempotency keys it applied, at the
// least: JetStream also drops a repeated command id within the stream's duplicate window.
const IdempotencyWindow = 24 * time.Hour

// KeyedCommandID returns the command id of a request made under an idempotency key: scope names
// the key and what it was sent to (method and path, say), body is the request. The same scope
// with the same body is the same command; the same scope with another body is refused with
// ErrIdempotencyKeyReused.
func KeyedCommandID(scope string, body []byte) string {
	s := sha256.Sum256([]byte(scope))
	d := sha256.Sum256(body)
	return idempotentPrefix + hex.EncodeToString(s[:16]) + "." + hex.EncodeToString(d[:8])
}

// keyScope returns the part of a command id made by KeyedCommandID that names the key and what it
// was sent to, the body left out; false for a command id made under no key.
func keyScope(commandID string) (string, bool) {
	rest, ok := strings.CutPrefix(commandID, idempotentPrefix)
	if !ok {
		return "", false
	}
	scope, _, ok := strings.Cut(rest, ".")
	return scope, ok
}

// appliedCommand is a command appended under an idempotency key.
type appliedCommand struct {
	ID       string    `json:"id"`
	Sequence uint64    `json:"sequence"`
	Events   int       `json:"events"`
	At       time.Time `json:"at"`
}

// remember records a command appended under an idempotency key, and forgets those older than the
// window.
func (a *aggregate) remember(id string, seq uint64, events int, at, now time.Time) {
	scope, _, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, idempotentPrefix) || now.Sub(at) > IdempotencyWindow {
		return
	}
	if a.applied == nil {
		a.applied = map[string]appliedCommand{}
	}
	a.applied[scope] = appliedCommand{ID: id, Sequence: seq, Events: events, At: at}
	for k, c := range a.applied {
		if now.Sub(c.At) > IdempotencyWindow {
			delete(a.applied, k)
		}
	}
}

// replayed returns the result of the command already applied under id's idempotency key, if
// any: a duplicate when id is the same, ErrIdempotencyKeyReused when the request differed.
func (a *aggregate) replayed(slug domain.Slug, id string, now time.Time) (Result, bool, error) {
	scope, _, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, idempotentPrefix) {
		return Result{}, false, nil
	}
	c, found := a.applied[scope]
	switch {
	case !found, now.Sub(c.At) > IdempotencyWindow:
		return Result{}, false, nil
	case c.ID != id:
		// Named as the admin API's header, which is how callers give the key.
		return Result{}, true, fmt.Errorf("Idempotency-Key: %w", ErrIdempotencyKeyReused)
	}
	return Result{Slug: slug, Version: c.Sequence, Events: c.Events, Duplicate: true}, true, nil
}
