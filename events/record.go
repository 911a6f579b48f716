package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// MaxCommandIDLen is the longest command id, in bytes, that a record may carry.
const MaxCommandIDLen = 128

// Envelope is one event as stored: a typed, versioned JSON payload that this package does not
// interpret.
type Envelope struct {
	// ID is "<command_id>/<index>" unless the producer chose one; Append fills it when empty.
	ID string `json:"id"`
	// Type is the wire name of the event, such as "menu_version.published".
	Type string `json:"type"`
	// Establishment is the slug of the establishment; Append fills it when empty.
	Establishment string `json:"establishment"`
	// Time is when the command that produced the event was decided.
	Time time.Time `json:"time"`
	// SchemaVersion is the version of the payload's schema for Type, starting at 1.
	SchemaVersion int `json:"schema_version"`
	// Payload is the event's body: any JSON value but null.
	Payload json.RawMessage `json:"payload"`
}

// Record is one stored message: every event of one command, appended atomically.
type Record struct {
	// Sequence is the record's stream sequence. It is set on every record read from the store
	// and is not part of the encoding.
	Sequence uint64 `json:"-"`
	// CommandID identifies the command; it is also the message id JetStream deduplicates on.
	CommandID string `json:"command_id"`
	// Establishment is the slug of the establishment the record belongs to.
	Establishment string `json:"establishment"`
	// Events are the command's events, in the order they apply.
	Events []Envelope `json:"events"`
	// Previous is the sequence of the establishment's record before this one, 0 when this is its
	// first: the one its append expected, as the log accepts no other. PreviousKnown says a
	// record read from the store carries that expectation, as every record Append writes does.
	// Neither is part of the encoding.
	Previous      uint64 `json:"-"`
	PreviousKnown bool   `json:"-"`
}

// Encode validates r and returns its JSON encoding. Payloads are written compacted and without
// HTML escaping, so that Decode(Encode(r)) reproduces r.
//
// The encoding is written by hand, field by field, in the order and escaping encoding/json uses:
// it is on the path of every command, and encoding/json would scan each payload three times
// (validity, marshaling, compaction) where a check that it is valid and compact is enough.
func Encode(r Record) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	size := 64 + len(r.CommandID) + len(r.Establishment)
	for _, e := range r.Events {
		size += 128 + len(e.ID) + len(e.Type) + len(e.Establishment) + len(e.Payload)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"command_id":`)
	WriteJSONString(buf, r.CommandID)
	buf.WriteString(`,"establishment":`)
	WriteJSONString(buf, r.Establishment)
	buf.WriteString(`,"events":[`)
	for i, e := range r.Events {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"id":`)
		WriteJSONString(buf, e.ID)
		buf.WriteString(`,"type":`)
		WriteJSONString(buf, e.Type)
		buf.WriteString(`,"establishment":`)
		WriteJSONString(buf, e.Establishment)
		buf.WriteString(`,"time":`)
		t, err := e.Time.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encode record: %w: event %d: time: %w", ErrInvalidRecord, i, err)
		}
		buf.Write(t)
		buf.WriteString(`,"schema_version":`)
		buf.WriteString(strconv.Itoa(e.SchemaVersion))
		buf.WriteString(`,"payload":`)
		start := buf.Len()
		// A payload is nearly always written by an encoder, compact already: it is then checked
		// and copied, ten times faster than json.Compact scans it.
		if compact(e.Payload) && ValidJSON(e.Payload) {
			buf.Write(e.Payload)
		} else if err := json.Compact(buf, e.Payload); err != nil {
			return nil, fmt.Errorf("encode record: %w: event %d: payload is not a json value: %w", ErrInvalidRecord, i, err)
		}
		if string(buf.Bytes()[start:]) == "null" {
			return nil, fmt.Errorf("encode record: %w: event %d: null payload", ErrInvalidRecord, i)
		}
		buf.WriteByte('}')
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

// ValidJSON is goccy's Valid, several times faster than encoding/json's and fuzzed against it
// (FuzzEncode here, FuzzValid in projections/dockey); a panic in it reads as invalid. Encode uses
// it before it copies a payload as it is, the projector before it stores a document.
func ValidJSON(v []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return gojson.Valid(v)
}

// WriteJSONString writes s as a JSON string the way encoding/json does without HTML escaping, for
// the encoders of records written by hand. Text of plain printable ASCII, nearly every string of
// a record, is written as it is.
func WriteJSONString(buf *bytes.Buffer, s string) {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // the newline Encode adds
}

// Decode parses and validates one stored record. Every error matches ErrInvalidRecord. Unknown
// fields are ignored, so that a record written by a newer version can still be read. Payloads are
// returned compacted. The Sequence of the result is zero.
func Decode(data []byte) (Record, error) {
	var r Record
	if err := Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("decode record: %w: %w", ErrInvalidRecord, err)
	}
	// Unmarshal has checked each payload is a JSON value; it is compacted below unless it is already.
	if err := r.validate(); err != nil {
		return Record{}, fmt.Errorf("decode record: %w", err)
	}
	for i := range r.Events {
		p := r.Events[i].Payload
		if !compact(p) {
			// Encode stores payloads compacted; a record written otherwise is compacted here.
			var buf bytes.Buffer
			if err := json.Compact(&buf, p); err != nil {
				return Record{}, fmt.Errorf("decode record: %w: event %d: payload: %w", ErrInvalidRecord, i, err)
			}
			p = buf.Bytes()
			r.Events[i].Payload = p
		}
		if string(p) == "null" {
			return Record{}, fmt.Errorf("decode record: %w: event %d: null payload", ErrInvalidRecord, i)
		}
	}
	return r, nil
}

// compact reports whether the JSON value v holds no insignificant space: no space, tab, carriage
// return or line feed outside its strings. It only reads v, where json.Compact would copy it
// through a scanner: every record read (a replay reads them all) is checked this way.
//
// Strings, most of a payload's bytes, are skipped from quote to quote with bytes.IndexByte: a
// quote ends the string unless an odd number of backslashes precede it.
func compact(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case ' ', '\t', '\n', '\r':
			return false
		case '"':
			for j := i + 1; ; {
				k := bytes.IndexByte(v[j:], '"')
				if k < 0 {
					return true // an unterminated string: nothing after it is outside
				}
				end := j + k
				escapes := 0
				for p := end - 1; p > i && v[p] == '\\'; p-- {
					escapes++
				}
				if j = end + 1; escapes%2 == 0 {
					i = end
					break
				}
			}
		}
	}
	return true
}

// validate checks the invariants shared by Encode and Decode but that of the payloads, which
// they check as they compact them: each is a JSON value other than null. The returned error
// wraps ErrInvalidRecord.
func (r Record) validate() error {
	if err := checkCommandID(r.CommandID); err != nil {
		return err
	}
	if err := checkSubjectToken(r.Establishment); err != nil {
		return fmt.Errorf("%w: establishment: %w", ErrInvalidRecord, err)
	}
	if len(r.Events) == 0 {
		return fmt.Errorf("%w: no events", ErrInvalidRecord)
	}
	for i, e := range r.Events {
		if err := e.validate(r.Establishment); err != nil {
			return fmt.Errorf("%w: event %d: %s", ErrInvalidRecord, i, err)
		}
	}
	return nil
}

func (e Envelope) validate(establishment string) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("empty id")
	case strings.TrimSpace(e.Type) == "":
		return fmt.Errorf("empty type")
	case !utf8.ValidString(e.Type) || !utf8.ValidString(e.ID):
		// JSON would store U+FFFD for the bad bytes: the record read back would differ.
		return fmt.Errorf("id or type is not valid utf-8")
	case e.Establishment != establishment:
		return fmt.Errorf("establishment %q differs from the record's %q", e.Establishment, establishment)
	case e.Time.IsZero():
		return fmt.Errorf("zero time")
	case e.SchemaVersion < 1:
		return fmt.Errorf("schema version %d is below 1", e.SchemaVersion)
	case len(e.Payload) == 0:
		return fmt.Errorf("empty payload")
	}
	return nil
}

// checkCommandID accepts 1 to MaxCommandIDLen visible ASCII characters: a command id travels as a
// message header, where spaces are trimmed and line breaks end the value.
func checkCommandID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty command id", ErrInvalidRecord)
	}
	if len(id) > MaxCommandIDLen {
		return fmt.Errorf("%w: command id is %d bytes long, more than %d", ErrInvalidRecord, len(id), MaxCommandIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: command id has a byte %#x that is not visible ascii", ErrInvalidRecord, c)
		}
	}
	return nil
}

// checkSubjectToken accepts a non-empty UTF-8 string usable as one subject token: no '.', '*' or '>',
// no white space and no control characters.
func checkSubjectToken(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid utf-8", s)
	}
	for _, r := range s {
		switch {
		case r == '.' || r == '*' || r == '>':
			return fmt.Errorf("%q contains %q", s, r)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("%q contains white space or a control character", s)
		}
	}
	return nil
}
