package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
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
	// Arrays longer than the fast path decodes before the walk.
	f.Add([]byte(`{"slug": "a", "business_hours": [` + strings.Repeat(`{"open_day": "lundi"},`, maxFastElements) + `{}]}`))
	f.Add([]byte(`{"slug": "a", "business_hours": [` + strings.Repeat(`1,`, maxFastElements) + `{}]}`))
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

// Once its list names no more errors, the walk allocates no path and no error for the elements
// it only counts: they cost what reading right elements costs. Once the list is full, the walk
// reads no further.
func TestShapeWalkCountsWithoutAllocating(t *testing.T) {
	type target struct {
		Wrong []struct{} `json:"wrong"`
		Right []int      `json:"right"`
	}
	allocs := func(field string, n int) float64 {
		body := []byte(`{"` + field + `":[` + strings.Repeat("1,", n-1) + `1]}`)
		return testing.AllocsPerRun(3, func() { _ = checkShape(body, reflect.TypeFor[target]()) })
	}
	read, counted := allocs("right", 9_000), allocs("wrong", 9_000)
	if extra, want := counted-read, float64(10*MaxFieldErrors); extra > want {
		t.Errorf("got %.0f more allocations for 9,000 wrong elements than for 9,000 right ones, want at most %.0f, those of the %d errors named", extra, want, MaxFieldErrors)
	}
	if full, beyond := allocs("wrong", 20_000), allocs("wrong", 1_000_000); beyond > full*1.05 {
		t.Errorf("got %.0f allocations for 1,000,000 wrong elements, want about as many as for 20,000 (%.0f)", beyond, full)
	}
}
