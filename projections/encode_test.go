package projections

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// TestStoredBundlesReadBack checks that the bundles of the fixtures, stored, decode to
// themselves, and that the fingerprint written beside one is that of the summary read back, from
// the binary form and from the JSON form of earlier versions alike: a replay over a bucket of
// either finds an unchanged bundle unchanged.
func TestStoredBundlesReadBack(t *testing.T) {
	for _, path := range []string{"../cmd/publisher/demo.json", "testdata/dated/snapshot.json", "testdata/uploaded-only/snapshot.json"} {
		for _, compressed := range []bool{false, true} {
			b := Render(fixture.Load(t, path, fixture.Date(t, "2026-11-22")), 42)
			if compressed {
				Compress(&b)
				b.Base, b.Starts = 41, time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC).Unix() // a day ahead
			}
			value, err := dockey.EncodeBundle(&b)
			if err != nil {
				t.Fatal(err)
			}
			var got dockey.Bundle
			if err := dockey.Decode(value, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalBundle(&got), normalBundle(&b)) {
				t.Errorf("%s (compressed %v): read back\n%+v\nwant\n%+v", path, compressed, got, b)
			}
			checkStoredPrint(t, &b, value)
			checkStoredPrint(t, &b, encodeWithEncodingJSON(t, &b))
		}
	}
}

// FuzzEncodeBundle stores bundles of any strings, with bodies that are compact JSON as Render
// makes them, and reads them back: the same bundle and the same fingerprint; a string that is not
// UTF-8, which the domain refuses, is refused.
func FuzzEncodeBundle(f *testing.F) {
	f.Add("chez-alice", int64(7), uint64(7), "active", true, "0123abcd", false, "https://x/a b.pdf", "midi", "https://x/fr", "", `"0011"`, "café <b>&</b>", []byte{1, 2, 3})
	f.Add("", int64(-1), uint64(0), "", false, "", true, "", "", "", "https://x/en", "", "\x00\u2028\xff\"\\", []byte(nil))
	f.Fuzz(func(t *testing.T, slug string, rev int64, seq uint64, status string, api bool, keyHash string, redirect bool,
		master, menuType, fr, en, etag, text string, gz []byte) {
		body, err := json.Marshal(map[string]any{"text": text, "n": rev, "list": []string{text, etag}})
		if err != nil {
			t.Fatal(err)
		}
		doc := dockey.Document{Body: body, ETag: etag, Gzip: gz}
		b := dockey.Bundle{
			Slug: slug, Revision: rev, Sequence: seq, Status: status, APIEnabled: api, KeyHash: keyHash,
			MenuRedirectEnabled: redirect, MasterMenuURL: master,
			Establishment: doc, Hours: dockey.Document{ETag: etag},
			Menus: dockey.Variants{All: doc, FR: doc, EN: dockey.Document{}},
		}
		if fr != "" || en != "" || menuType != "" {
			b.Redirects = map[string]dockey.Redirect{menuType: {FR: fr, EN: en}, menuType + "-2": {EN: fr}}
			b.MenuDetails = map[string]dockey.Variants{menuType: {All: doc}, text: {EN: doc}}
		}
		value, err := dockey.EncodeBundle(&b)
		valid := true
		for _, s := range []string{slug, status, keyHash, master, menuType, fr, en, etag, text} {
			valid = valid && utf8.ValidString(s)
		}
		if !valid {
			if err == nil {
				t.Fatalf("a bundle with a string that is not UTF-8 was stored: %q", value)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var got dockey.Bundle
		if err := dockey.Decode(value, &got); err != nil || !reflect.DeepEqual(normalBundle(&got), normalBundle(&b)) {
			t.Fatalf("read back\n%+v (%v)\nwant\n%+v", got, err, b)
		}
		checkStoredPrint(t, &b, value)
	})
}

// normalBundle returns b with its empty bodies, codings and maps nil, as they are read back.
func normalBundle(b *dockey.Bundle) dockey.Bundle {
	n := *b
	n.MenuDetails = maps.Clone(b.MenuDetails)
	EachDocument(&n, func(_ string, d *dockey.Document) {
		if len(d.Body) == 0 {
			d.Body = nil
		}
		if len(d.Gzip) == 0 {
			d.Gzip = nil
		}
	})
	if len(n.Redirects) == 0 {
		n.Redirects = nil
	}
	if len(n.MenuDetails) == 0 {
		n.MenuDetails = nil
	}
	return n
}

// checkStoredPrint checks that the fingerprint the projector writes beside the stored value of b
// is that of the summary read back from the value.
func checkStoredPrint(tb testing.TB, b *dockey.Bundle, value []byte) {
	tb.Helper()
	s, err := SummarizeStored(value)
	if err != nil {
		tb.Fatalf("summarizeStored: %v", err)
	}
	if got, want := storedOf(b).summary().Fingerprint(), s.Fingerprint(); got != want {
		tb.Fatalf("the fingerprint written with the bundle, %x, is not that of its stored summary, %x", got, want)
	}
}

// encodeWithEncodingJSON is the reference encodeJSON stands for, and the JSON form in which
// earlier versions stored bundles: encoding/json without HTML escaping, without the trailing
// newline.
func encodeWithEncodingJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	return encodeWithEncodingJSONHTML(tb, v, false)
}

// encodeWithEncodingJSONHTML is encodeWithEncodingJSON with the HTML escaping given.
func encodeWithEncodingJSONHTML(tb testing.TB, v any, html bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		tb.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Every document of the fixtures encodes to what encoding/json writes.
func TestDocumentsEncodeAsEncodingJSON(t *testing.T) {
	for _, path := range []string{"../cmd/publisher/demo.json", "testdata/dated/snapshot.json", "testdata/uploaded-only/snapshot.json"} {
		e := fixture.Load(t, path, fixture.Date(t, "2026-11-22"))
		menus := withSections(activeMenus(e))
		docs := []any{establishmentDoc(e), hoursDoc(e)}
		for _, v := range allVariants {
			docs = append(docs, menuListDoc(e, menus, v))
			for _, m := range menus {
				docs = append(docs, menuDetailDoc(m, v))
			}
		}
		for i, d := range docs {
			if got, want := encodeJSON(d, false), encodeWithEncodingJSON(t, d); !bytes.Equal(got, want) {
				t.Errorf("%s, document %d (%T):\n got %s\nwant %s", path, i, d, got, want)
			}
		}
		fr, en := jsonldDocs(e, menus)
		for i, d := range []jsonldBody{fr, en} {
			if got, want := encodeJSON(d, true), encodeWithEncodingJSONHTML(t, d, true); !bytes.Equal(got, want) {
				t.Errorf("%s, JSON-LD %d:\n got %s\nwant %s", path, i, got, want)
			}
		}
	}
}

// FuzzDocumentEncoding checks encodeJSON against encoding/json on documents of any strings and
// numbers: escapes, invalid UTF-8, U+2028 and U+2029, floats near the switch to exponents.
func FuzzDocumentEncoding(f *testing.F) {
	f.Add("Chez Marcel", "vins nature & desserts <maison>", "12.50", 48.8799, 2.3397, int64(101), 3)
	f.Add("a\u2028b\u2029c", "\x00\x1f\x7f\"\\\t\n\r\xff\xfe é 😀", "", 1e21, -1e-7, int64(-1), -5)
	f.Add("", "\u00e9\u0301", "0", 0.000001, 123456789012345678901.0, int64(1)<<53, 0)
	f.Fuzz(func(t *testing.T, name, text, price string, lat, lon float64, id int64, position int) {
		if math.IsNaN(lat) || math.IsInf(lat, 0) || math.IsNaN(lon) || math.IsInf(lon, 0) {
			return // a document holds only finite numbers
		}
		docs := []any{
			establishmentBody{Name: name, Description: &text, BusinessType: text, Location: locationBody{Address: &name, Latitude: &lat, Longitude: &lon}},
			hoursBody{Summary: &text, BusinessHours: []rangeBody{{OpenDay: name, OpenTime: text}}, SpecialHoursComing: []specialBody{}},
			menuDetailBody{
				MenuType: menuTypeBody{Slug: name, Name: text}, ReferenceDate: &price,
				Assets:   []assetBody{{LanguageScope: name, URLs: []string{text, price}}},
				Sections: []sectionBody{{Name: text, Position: position, Items: []itemBody{{ID: id, Name: name, Description: &text, Price: &price, Vegan: true}}}},
			},
		}
		var scratch Scratch // a replay's encoder: the same bytes, brace replaced, in one buffer
		for _, d := range docs {
			want := encodeWithEncodingJSON(t, d)
			if got := encodeJSON(d, false); !bytes.Equal(got, want) {
				t.Errorf("%T:\n got %q\nwant %q", d, got, want)
			}
			if tail := scratch.template(headRevision, d).tail; string(tail) != ","+string(want[1:]) {
				t.Errorf("%T from a scratch:\n got %q\nwant %q", d, tail, ","+string(want[1:]))
			}
		}
		// The JSON-LD, HTML escaping on: its text goes into a script element.
		ld := jsonldBody{
			Context: name, Type: text, Name: name, Description: text, Geo: &geoLD{Type: name, Latitude: lat, Longitude: lon},
			Hours: []hoursLD{{Type: text, DayOfWeek: []string{name}, Opens: text}},
			HasMenu: []menuLD{{Type: name, Name: text, InLanguage: name, Sections: []sectionLD{{Type: text, Name: name,
				Items: []itemLD{{Type: name, Name: text, Description: text, Diets: []string{text}}}}}}},
		}
		want := encodeWithEncodingJSONHTML(t, ld, true)
		if got := encodeJSON(ld, true); !bytes.Equal(got, want) {
			t.Errorf("JSON-LD:\n got %q\nwant %q", got, want)
		}
		if got := scratch.encode(ld, true); !bytes.Equal(got, want) {
			t.Errorf("JSON-LD from a scratch:\n got %q\nwant %q", got, want)
		}
	})
}

// TestStoredBundlesDecodeWithoutCopies checks that what EncodeBundle writes, dockey.DecodeShared
// decodes as dockey.Decode does, the slug and every body sharing the stored value's bytes rather
// than copies of them.
func TestStoredBundlesDecodeWithoutCopies(t *testing.T) {
	within := func(p, value []byte) bool {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(value)))
		at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
		return at >= start && at+uintptr(len(p)) <= start+uintptr(len(value))
	}
	var scratch []byte
	for _, f := range fixtures(t) {
		b := Render(f.e, 42)
		b.Sequence = 1234 // as every stored bundle has one
		Compress(&b)
		value, err := dockey.EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		var want, got dockey.Bundle
		if err := dockey.Decode(value, &want); err != nil {
			t.Fatal(err)
		}
		if scratch, err = dockey.DecodeShared(value, &got, scratch); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DecodeShared gives\n%+v\nDecode\n%+v", f.name, got, want)
		}
		if !within(unsafe.Slice(unsafe.StringData(got.Slug), len(got.Slug)), value) {
			t.Errorf("%s: the slug is a copy", f.name)
		}
		bodies := 0
		EachDocument(&got, func(_ string, d *dockey.Document) {
			if len(d.Body) > 0 {
				bodies++
				if !within(d.Body, value) {
					t.Errorf("%s: a body is a copy", f.name)
				}
			}
		})
		if bodies < 5 {
			t.Errorf("%s: %d bodies, want the five at least that every bundle has", f.name, bodies)
		}
	}
}
