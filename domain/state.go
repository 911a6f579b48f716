package domain

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sync"
)

// stateRevision is raised whenever what a stored state means changes without its shape changing:
// a new rule in Apply, a field whose values are read differently. A change of shape (a field
// added, removed, renamed or retyped) changes StateFormat by itself.
const stateRevision = 2

// StateFormat names the encoding of an Establishment by EncodeState and the rules that built it:
// the state revision and a fingerprint of the aggregate's Go types. A cached state of another
// format was written by other code and must not be used.
func StateFormat() string {
	stateFormatOnce.Do(func() {
		h := fnv.New64a()
		fingerprint(h, reflect.TypeFor[Establishment](), map[reflect.Type]bool{})
		stateFormat = fmt.Sprintf("establishment/%d/%016x", stateRevision, h.Sum64())
	})
	return stateFormat
}

var (
	stateFormatOnce sync.Once
	stateFormat     string
)

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// fingerprint writes the shape of t: kinds, type names, field names and tags, recursively.
func fingerprint(w interface{ Write([]byte) (int, error) }, t reflect.Type, seen map[reflect.Type]bool) {
	fmt.Fprintf(w, "%s:%s", t.Kind(), t.Name())
	if t.Implements(textMarshalerType) || seen[t] {
		return // encoded as text by its own methods, or already described
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		w.Write([]byte("["))
		fingerprint(w, t.Elem(), seen)
		w.Write([]byte("]"))
	case reflect.Map:
		w.Write([]byte("{"))
		fingerprint(w, t.Key(), seen)
		fingerprint(w, t.Elem(), seen)
		w.Write([]byte("}"))
	case reflect.Struct:
		w.Write([]byte("{"))
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(w, "%s %q %t ", f.Name, f.Tag, f.Anonymous)
			fingerprint(w, f.Type, seen)
			w.Write([]byte(";"))
		}
		w.Write([]byte("}"))
	}
}

// EncodeState returns the stored form of e, which DecodeState reads back to an equal aggregate.
func EncodeState(e *Establishment) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode state of %s: %w", e.Slug, err)
	}
	return b, nil
}

// DecodeState reads a state written by EncodeState for the establishment slug.
func DecodeState(slug Slug, data []byte) (*Establishment, error) {
	var e Establishment
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("decode state of %s: %w", slug, err)
	}
	if e.Slug != slug {
		return nil, fmt.Errorf("decode state of %s: the state is of %q", slug, e.Slug)
	}
	return &e, nil
}
