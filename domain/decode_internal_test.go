package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
	"unicode/utf8"
)

// slowDecodeStrict is DecodeStrict without its fast path: the complete walk, then encoding/json.
func slowDecodeStrict(data []byte, v any) error {
	if err := checkShape(data, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Field: "body", Reason: "unexpected data after the JSON value"}
	}
	return nil
}

// FuzzDecodeStrictFastPath checks that the fast path accepts exactly what the complete walk
// accepts, and decodes it to the same value.
func FuzzDecodeStrictFastPath(f *testing.F) {
	base, err := os.ReadFile("testdata/base.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base)
	f.Add(bytes.Replace(base, []byte(`"name"`), []byte(`"Name"`), 1))
	f.Add(bytes.Replace(base, []byte(`"name"`), []byte(`"name": "x", "name"`), 1))
	f.Add(bytes.Replace(base, []byte(`"slug"`), []byte(`"\u0073lug"`), 1))
	f.Add(bytes.Replace(base, []byte(`"slug"`), []byte(`"ſlug"`), 1))
	f.Add([]byte(`{"slug": "a", "menu_types": [{"slug": "b", "versions": [{"id": "c", "sections": [{"items": [{"id": 1, "ID": 2}]}]}]}]}`))
	f.Add([]byte(`{"slug": "a"} {}`))
	f.Add([]byte(`{"slug": "a", "name": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow EstablishmentInput
		errFast := DecodeStrict(bytes.NewReader(data), &fast)
		errSlow := slowDecodeStrict(data, &slow)
		if utf8.Valid(data) && !bytes.Equal(bytes.TrimSpace(data), []byte("null")) && (errFast == nil) != (errSlow == nil) {
			t.Fatalf("fast path error %v, walk error %v", errFast, errSlow)
		}
		if errFast == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast path decoded %+v, walk decoded %+v", fast, slow)
		}
	})
}
