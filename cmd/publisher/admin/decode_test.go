package admin

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/opencarte/publisher/domain"
)

// FuzzDecodeDocument checks that the fast decoder of request documents accepts exactly what
// encoding/json's strict decoding accepts, and decodes it to the same value.
func FuzzDecodeDocument(f *testing.F) {
	base, err := os.ReadFile("../demo.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base)
	f.Add(bytes.Replace(base, []byte(`"name"`), []byte(`"Name"`), 1))
	f.Add(bytes.Replace(base, []byte(`"name"`), []byte(`"name": "x", "name"`), 1))
	f.Add(bytes.Replace(base, []byte(`"slug"`), []byte(`"\u0073lug"`), 1))
	f.Add(bytes.Replace(base, []byte(`"price": "12.50"`), []byte(`"price": 12.50`), 1))
	f.Add(bytes.Replace(base, []byte(`"id": 101`), []byte(`"id": 1e3`), 1))
	f.Add(bytes.Replace(base, []byte(`"id": 101`), []byte(`"id": 99999999999999999999`), 1))
	f.Add(bytes.Replace(base, []byte(`"gluten_free": true`), []byte(`"gluten_free": "true"`), 1))
	f.Add(append(bytes.Clone(base), []byte(` {}`)...))
	f.Add([]byte(`{"slug": "a", "menu_types": [{"slug": "b", "versions": [{"id": "c", "sections": [{"items": [{"id": 1, "ID": 2}]}]}]}]}`))
	f.Add([]byte(`{"slug": "a", "name": null, "contact": {"email": 1}}`))
	f.Add([]byte(`{"slug":"a","latitude":1}`))
	// A member of another object of the format: known to the scan of keys, unknown here.
	f.Add([]byte(`{"slug": "a", "price": "1.00", "contact": {"open_day": "lundi"}}`))
	// Arrays longer than the fast path decodes before the walk.
	f.Add([]byte(`{"slug": "a", "business_hours": [` + strings.Repeat(`{"open_day": "lundi"},`, 10_000) + `{}]}`))
	f.Add([]byte(`{"slug": "a", "business_hours": [` + strings.Repeat(`1,`, 10_000) + `{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, std domain.EstablishmentInput
		errFast := decodeDocument(data, &fast)
		errStd := domain.DecodeStrict(bytes.NewReader(data), &std)
		if (errFast == nil) != (errStd == nil) {
			t.Fatalf("fast decoder error %v, encoding/json error %v", errFast, errStd)
		}
		if errFast == nil && !reflect.DeepEqual(fast, std) {
			t.Fatalf("fast decoder decoded %+v, encoding/json %+v", fast, std)
		}
		if errFast != nil && errFast.Error() != errStd.Error() {
			t.Fatalf("fast decoder refused with %q, encoding/json with %q", errFast, errStd)
		}
	})
}

// BenchmarkDecodeDocument decodes the demo's import document as PUT and import do.
func BenchmarkDecodeDocument(b *testing.B) {
	data, err := os.ReadFile("../demo.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var s domain.EstablishmentInput
		if err := decodeDocument(data, &s); err != nil {
			b.Fatal(err)
		}
	}
}
