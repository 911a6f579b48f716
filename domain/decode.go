package domain

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeStrict reads exactly one JSON value from r into v, rejecting unknown fields, duplicate
// fields, wrong types and trailing data. Each rejection is a *FieldError whose Field is the path
// of the value in the notation of the import format ("menu_types[0].versions[1].id"), and every
// rejected field is reported at once. An error reading r is returned wrapped, not as a
// *FieldError, so that a caller can tell a body that is too large from a bad one.
func DecodeStrict(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	return DecodeStrictWith(data, v, nil)
}

// Decoder decodes one JSON value, the whole of data, into v the way encoding/json's Decoder does
// with DisallowUnknownFields: member names matched without regard to case, an unknown member, a
// value of the wrong type or trailing data an error.
type Decoder func(data []byte, v any) error

// DecodeStrictWith is DecodeStrict on data in memory, with decode, when not nil, in place of
// encoding/json for documents that are well formed: a faster implementation of encoding/json's
// semantics, say. A document it refuses is decoded again by encoding/json after the complete
// walk, which names every problem; the keys of one it accepts are checked as always. A document
// with an array of more than 10,000 elements, longer than any list of the import format, is
// walked before decode runs: the walk stops after a bounded number of errors, where a decoder
// fills the whole array before it reports the first.
func DecodeStrictWith(data []byte, v any, decode Decoder) error {
	// encoding/json would replace each invalid byte with U+FFFD and store text nobody sent.
	if !utf8.Valid(data) {
		return &FieldError{Field: "body", Reason: "not valid UTF-8"}
	}
	// encoding/json names a nested value without its array indices and an unknown field by its
	// key alone, and stops at the first problem: the shape is checked first, with full paths.
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		// encoding/json reads null into a struct as "nothing to set": a request of null would
		// pass as an empty object.
		if t.Elem().Kind() == reflect.Struct && bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return &FieldError{Field: "body", Reason: "want a JSON object, got null"}
		}
		// The walk costs several times the decoding itself. A well-formed document, the common
		// case, is decoded directly and its keys checked by a quick scan; anything the scan cannot
		// vouch for is decoded again from scratch after the complete walk.
		rv := reflect.ValueOf(v)
		if !rv.IsNil() {
			saved := reflect.New(t.Elem()).Elem()
			saved.Set(rv.Elem())
			if done, err := decodeFast(data, v, t.Elem(), decode); done {
				return err
			}
			rv.Elem().Set(saved)
		}
		if err := checkShape(data, t.Elem()); err != nil {
			return err
		}
	}
	if err := decodeStd(data, v); err != nil {
		return describeJSONError(err)
	}
	return nil
}

// decodeStd is a Decoder: encoding/json, refusing unknown fields and trailing data.
func decodeStd(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Field: "body", Reason: "unexpected data after the JSON value"}
	}
	return nil
}

// decodeFast decodes data into v with decode (encoding/json when nil) when a scan vouches for
// what decode lets pass and the walk would not: keys that match a field only without regard to
// case, keys given twice in one object. A document with a long array is walked first, and done
// with the walk's error if it finds any. It reports done false, with v in an unspecified state,
// when the complete walk must decide: the walk then runs and names every problem.
func decodeFast(data []byte, v any, t reflect.Type, decode Decoder) (done bool, err error) {
	names, ok := fieldNames(t)
	if !ok {
		return false, nil
	}
	if decode == nil {
		decode = decodeStd
	}
	switch scanFast(data, names) {
	case fastFits:
		return decode(data, v) == nil, nil
	case fastLongArray:
		// The decoders fill a whole array before they report its first element of the wrong type:
		// 1.9 million numbers where objects belong cost hundreds of megabytes before the walk
		// starts, where the walk alone stops after a bounded number of errors. A long array is
		// walked first; the walk vouches for the keys of a document it accepts.
		if err := checkShape(data, t); err != nil {
			return true, err
		}
		return decode(data, v) == nil, nil
	}
	return false, nil
}

// fastScan is what a scan of a document says of the fast path.
type fastScan int

const (
	fastFits      fastScan = iota // the keys are exact and the arrays short: decode directly
	fastKeys                      // a key is not exact: the walk judges it
	fastLongArray                 // the arrays hold more than maxFastElements elements: walk first
)

// maxFastElements is the most array elements, all arrays together, that the fast path decodes
// before the walk: a decoder fills an array before it reports a wrong element of it, and many
// arrays of a little less than any bound per array would fill as much. No list of the import
// format holds more than a few hundred elements.
const maxFastElements = 10_000

// fieldNameSets caches, by Go type, the JSON member names of every struct reachable from it.
var fieldNameSets sync.Map // reflect.Type → fieldNameSet

type fieldNameSet struct {
	names map[string]bool
	ok    bool // false: the type holds a value the fast path cannot check (map, interface, ...)
}

// fieldNames returns the exact JSON member names of every struct type reachable from t, and
// whether every object a value of t can hold is such a struct.
func fieldNames(t reflect.Type) (map[string]bool, bool) {
	if s, ok := fieldNameSets.Load(t); ok {
		return s.(fieldNameSet).names, s.(fieldNameSet).ok
	}
	set := fieldNameSet{names: map[string]bool{}, ok: true}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if seen[t] {
			return
		}
		seen[t] = true
		switch {
		case t.Implements(jsonUnmarshalerType), reflect.PointerTo(t).Implements(jsonUnmarshalerType),
			reflect.PointerTo(t).Implements(textUnmarshalerType), t == jsonNumberType:
			set.ok = false
		case t.Kind() == reflect.Map || t.Kind() == reflect.Interface:
			set.ok = false
		case t.Kind() == reflect.Struct:
			for _, f := range structFields(t) {
				set.names[f.name] = true
				if f.quoted {
					set.ok = false
				}
				walk(f.typ)
			}
		}
	}
	walk(t)
	fieldNameSets.Store(t, set)
	return set.names, set.ok
}

// scanFast scans the JSON in data: every object key must be one of names, byte for byte and
// without escapes, and appear once in its object, and the arrays hold at most maxFastElements
// elements in all. It reads data as valid JSON: what it says of anything else does not matter, since
// the decoder refuses it.
func scanFast(data []byte, names map[string]bool) fastScan {
	type frame struct {
		object bool
		keys   int // index in keys where this object's keys start
	}
	var stack []frame
	var keys [][]byte
	elements := 0 // in every array so far, less one each
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '{', '[':
			stack = append(stack, frame{object: c == '{', keys: len(keys)})
			i++
		case '}', ']':
			if len(stack) == 0 {
				return fastKeys
			}
			keys = keys[:stack[len(stack)-1].keys]
			stack = stack[:len(stack)-1]
			i++
		case '"':
			// The closing quote is the first one not escaped; IndexByte finds quotes far faster
			// than a loop over every byte of the text.
			j, escaped := i+1, false
			for {
				q := bytes.IndexByte(data[j:], '"')
				if q < 0 {
					return fastKeys
				}
				j += q
				n := 0 // backslashes right before the quote
				for n < j-i-1 && data[j-1-n] == '\\' {
					n++
				}
				if n > 0 {
					escaped = true
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			if !escaped && bytes.IndexByte(data[i+1:j], '\\') >= 0 {
				escaped = true
			}
			s := data[i+1 : j]
			i = j + 1
			k := i
			for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
				k++
			}
			if k >= len(data) || data[k] != ':' || len(stack) == 0 || !stack[len(stack)-1].object {
				continue // a string value
			}
			if escaped || !names[string(s)] {
				return fastKeys
			}
			for _, prev := range keys[stack[len(stack)-1].keys:] {
				if bytes.Equal(prev, s) {
					return fastKeys
				}
			}
			keys = append(keys, s)
		case ',':
			if top := len(stack) - 1; top >= 0 && !stack[top].object {
				if elements++; elements >= maxFastElements {
					return fastLongArray
				}
			}
			i++
		default:
			i++
		}
	}
	return fastFits
}

func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return &FieldError{Field: field, Reason: fmt.Sprintf("wrong type: got JSON %s, want %s", typeErr.Value, jsonTypeName(typeErr.Type))}
	case errors.As(err, &syntaxErr):
		return &FieldError{Field: "body", Reason: fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)}
	case errors.Is(err, io.EOF):
		return &FieldError{Field: "body", Reason: "empty body, want a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Field: "body", Reason: "invalid JSON: unexpected end"}
	}
	// encoding/json reports an unknown field only as text: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &FieldError{Field: strings.Trim(name, `"`), Reason: "unknown field"}
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe
	}
	return &FieldError{Field: "body", Reason: err.Error()}
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "string"
	}
	return "object"
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
)

// checkShape walks the JSON value in data against the Go type t the way encoding/json would
// decode it, and reports every unknown or duplicate field and every value of the wrong type with
// its full path. Values whose type decodes itself (json.Unmarshaler, interfaces) are left to
// encoding/json. A syntax error or trailing data stops the walk and is reported alone. The walk
// also stops once its list of errors is full: what it found is reported, with how many it left
// out.
func checkShape(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := shapeWalker{dec: dec, fields: map[reflect.Type][]shapeField{}}
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return &FieldError{Field: "body", Reason: "empty body, want a JSON object"}
	}
	if err != nil {
		return syntaxError(err)
	}
	switch err := w.value(tok, t); {
	case errors.Is(err, errEnough):
		return w.fe.Err()
	case err != nil:
		return syntaxError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Field: "body", Reason: "unexpected data after the JSON value"}
	}
	return w.fe.Err()
}

func syntaxError(err error) error {
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return &FieldError{Field: "body", Reason: fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &FieldError{Field: "body", Reason: "invalid JSON: unexpected end"}
	}
	return &FieldError{Field: "body", Reason: fmt.Sprintf("invalid JSON: %v", err)}
}

type shapeField struct {
	name   string
	typ    reflect.Type
	quoted bool // the ",string" option: the value is a JSON string holding the literal
}

type shapeWalker struct {
	dec    *json.Decoder
	fe     FieldErrorList
	fields map[reflect.Type][]shapeField
	depth  int
	at     []pathStep // where the walk is, from the top
}

// pathStep is one step of the walk's path: a member of an object, or an element of an array.
type pathStep struct {
	key   string
	index int // -1 for a member
}

// maxShapeDepth bounds the recursion of the walk, as encoding/json bounds its own.
const maxShapeDepth = 10000

var errTooDeep = errors.New("exceeded max depth")

// errEnough stops the walk when its list of errors is full.
var errEnough = errors.New("enough errors")

// value checks the value that starts with tok, at w.at, against t. It returns only syntax errors,
// and errEnough; shape errors are collected in w.fe. The path of a value is written out only for
// an error that is kept: writing it for every element of a hostile array would cost more memory
// than the array.
func (w *shapeWalker) value(tok json.Token, t reflect.Type) error {
	if tok == nil {
		return nil // null leaves a Go value as it is, and sets a pointer, slice or map to nil
	}
	if w.depth++; w.depth > maxShapeDepth {
		return errTooDeep
	}
	defer func() { w.depth-- }()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Implements(jsonUnmarshalerType), reflect.PointerTo(t).Implements(jsonUnmarshalerType),
		t == jsonNumberType, t.Kind() == reflect.Interface:
		return w.skip(tok)
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		s, ok := tok.(string)
		if !ok {
			w.wrongType(tok, "string")
			return w.skip(tok)
		}
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(s)); err != nil {
			w.fail("%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.object(tok, func(key string) (reflect.Type, string, bool) {
			f, ok := w.lookup(t, key)
			return f.typ, f.name, ok && !f.quoted
		})
	case reflect.Map:
		return w.object(tok, func(key string) (reflect.Type, string, bool) { return t.Elem(), key, true })
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return w.skip(tok) // []byte is a base64 string
		}
		if tok != json.Delim('[') {
			w.wrongType(tok, "array")
			return w.skip(tok)
		}
		return w.array(t.Elem())
	case reflect.String:
		if _, ok := tok.(string); !ok {
			w.wrongType(tok, "string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			w.wrongType(tok, "boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			w.wrongType(tok, "integer")
		} else if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			w.fail("%s is not an integer of %d bits", n, t.Bits())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := tok.(json.Number)
		if !ok {
			w.wrongType(tok, "integer")
		} else if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			w.fail("%s is not a non-negative integer of %d bits", n, t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			w.wrongType(tok, "number")
		} else if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			w.fail("%s is out of range", n)
		}
	}
	return w.skip(tok)
}

// array checks the elements of the JSON array whose '[' was read against elem, and reads its ']'.
func (w *shapeWalker) array(elem reflect.Type) error {
	top := len(w.at)
	w.at = append(w.at, pathStep{})
	defer func() { w.at = w.at[:top] }()
	for i := 0; w.dec.More(); i++ {
		if w.fe.Full() {
			return errEnough
		}
		vt, err := w.dec.Token()
		if err != nil {
			return err
		}
		w.at[top].index = i
		if err := w.value(vt, elem); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// object checks a JSON object whose member types field gives; field returns false for a member
// that is not known, or whose check is left to encoding/json with a nil type.
func (w *shapeWalker) object(tok json.Token, field func(key string) (reflect.Type, string, bool)) error {
	if tok != json.Delim('{') {
		w.wrongType(tok, "object")
		return w.skip(tok)
	}
	top := len(w.at)
	w.at = append(w.at, pathStep{index: -1})
	defer func() { w.at = w.at[:top] }()
	var seen map[string]bool // made for the first member: an empty object costs nothing
	for w.dec.More() {
		if w.fe.Full() {
			return errEnough
		}
		kt, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := kt.(string)
		vt, err := w.dec.Token()
		if err != nil {
			return err
		}
		w.at[top].key = key
		if seen == nil {
			seen = map[string]bool{}
		}
		t, name, ok := field(key)
		switch {
		case t == nil:
			w.fail("unknown field")
		case seen[name]:
			w.fail("duplicate field")
		case ok:
			seen[name] = true
			if err := w.value(vt, t); err != nil {
				return err
			}
			continue
		default:
			seen[name] = true
		}
		if err := w.skip(vt); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// skip consumes the rest of the value that starts with tok.
func (w *shapeWalker) skip(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func (w *shapeWalker) wrongType(tok json.Token, want string) {
	if !w.fe.Naming() {
		w.fe.add("", "") // counted only: no arguments to format
		return
	}
	got := "object"
	switch tok.(type) {
	case string:
		got = "string"
	case json.Number:
		got = "number"
	case bool:
		got = "boolean"
	}
	if tok == json.Delim('[') {
		got = "array"
	}
	w.fail("wrong type: got JSON %s, want %s", got, want)
}

// fail adds an error at the walk's place. The place is written out only when the error is kept.
func (w *shapeWalker) fail(format string, args ...any) {
	if !w.fe.Naming() {
		w.fe.add("", "")
		return
	}
	w.fe.add(w.path(), format, args...)
}

// path writes out w.at in the notation of the import format: "menu_types[0].versions[1].id", or
// "body" for the top.
func (w *shapeWalker) path() string {
	if len(w.at) == 0 {
		return "body"
	}
	var b strings.Builder
	for _, s := range w.at {
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// lookup finds the member key of struct t by its exact name. encoding/json would also take a
// case-insensitive match ("Name" for "name"); a strict format names each field one way only.
func (w *shapeWalker) lookup(t reflect.Type, key string) (shapeField, bool) {
	fields, ok := w.fields[t]
	if !ok {
		fields = structFields(t)
		w.fields[t] = fields
	}
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	return shapeField{}, false
}

// structFields lists the JSON members of struct t: its own fields first, then those promoted
// from embedded structs, so that a lookup finds the shallower one.
func structFields(t reflect.Type) []shapeField {
	var own, promoted []shapeField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				promoted = append(promoted, structFields(ft)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		quoted := false
		for _, o := range strings.Split(opts, ",") {
			quoted = quoted || o == "string"
		}
		own = append(own, shapeField{name: name, typ: sf.Type, quoted: quoted})
	}
	return append(own, promoted...)
}
