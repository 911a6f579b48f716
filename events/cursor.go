package events

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidCursor reports a cursor that ParseCursor cannot read.
var ErrInvalidCursor = errors.New("events: invalid cursor")

// Cursor is a position in the changes feed: in its first sync, a full read of the bucket of
// bundles, or after it, in the change signals. Clients hold it as the opaque text String gives.
type Cursor struct {
	// Signal is the sequence of the last signal read. During the first sync it is the signals'
	// last sequence when the sync started, where the changes go on from once it ends.
	Signal uint64
	// Sync is true during the first sync; Generation names the bucket of bundles it reads, and
	// Bundle is the sequence of the last bundle read in that bucket's stream.
	Sync       bool
	Generation int
	Bundle     uint64
	// SkipStoredUpTo and SkipUntil are set after a first sync: a signal with a sequence up to
	// SkipUntil whose Stored is from 1 to SkipStoredUpTo is dropped, as the sync gave that state or a
	// newer one.
	SkipStoredUpTo uint64
	SkipUntil      uint64
}

// cursorVersion starts the text of every cursor, so that its form can change.
const cursorVersion = "c1"

// maxCursorLen bounds the text ParseCursor reads.
const maxCursorLen = 256

// Skips reports whether the cursor drops the signal s at sequence seq.
func (c Cursor) Skips(seq uint64, s Signal) bool {
	return seq <= c.SkipUntil && s.Stored > 0 && s.Stored <= c.SkipStoredUpTo
}

// String returns the cursor as clients hold it: URL-safe base64, without padding, of its fields.
func (c Cursor) String() string {
	sync := "0"
	if c.Sync {
		sync = "1"
	}
	text := strings.Join([]string{cursorVersion, sync, strconv.Itoa(c.Generation),
		strconv.FormatUint(c.Bundle, 10), strconv.FormatUint(c.Signal, 10),
		strconv.FormatUint(c.SkipStoredUpTo, 10), strconv.FormatUint(c.SkipUntil, 10)}, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(text))
}

// ParseCursor reads a cursor String wrote. The error matches ErrInvalidCursor.
func ParseCursor(s string) (Cursor, error) {
	c, err := parseCursor(s)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: %w", ErrInvalidCursor, err)
	}
	return c, nil
}

func parseCursor(s string) (Cursor, error) {
	if len(s) == 0 || len(s) > maxCursorLen {
		return Cursor{}, fmt.Errorf("length %d, want 1 to %d", len(s), maxCursorLen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, errors.New("not a cursor this service gave")
	}
	f := strings.Split(string(raw), ".")
	if len(f) != 7 || f[0] != cursorVersion || f[1] != "0" && f[1] != "1" {
		return Cursor{}, errors.New("not a cursor this service gave")
	}
	var n [5]uint64
	for i := range n {
		if n[i], err = strconv.ParseUint(f[i+2], 10, 63); err != nil {
			return Cursor{}, errors.New("not a cursor this service gave")
		}
	}
	c := Cursor{Sync: f[1] == "1", Generation: int(n[0]), Bundle: n[1], Signal: n[2], SkipStoredUpTo: n[3], SkipUntil: n[4]}
	switch {
	case c.Sync && c.Generation < 1:
		return Cursor{}, errors.New("a first sync's cursor without its generation")
	case c.Sync && (c.SkipStoredUpTo != 0 || c.SkipUntil != 0):
		return Cursor{}, errors.New("a first sync's cursor with the fields of a later one")
	}
	return c, nil
}
