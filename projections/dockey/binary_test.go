package dockey

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// doc returns a document whose entity tag is its own, with a gzip coding when gz is set.
func doc(body, gz string) Document {
	d := Document{Body: []byte(body), ETag: fmt.Sprintf(`"%016x"`, xxhash.Sum64String(body))}
	if gz != "" {
		d.Gzip = []byte(gz)
	}
	return d
}

// sampleBinary is a bundle with every field set, documents absent, equal documents within a
// variant, across resources and across menu details, and strings that JSON would escape.
func sampleBinary() *Bundle {
	menu := doc(`[{"slug":"midi","name":"Midi <b>&</b>"}]`, "\x1f\x8bmenu")
	detail := doc(`{"sections":[{"name":"Plats \"maison\""}]}`, "\x1f\x8bdetail")
	return &Bundle{
		Slug: "chez-alice", Revision: 42, Sequence: 1234, Base: 41, Starts: 1764111600,
		Status: StatusActive, APIEnabled: true, KeyHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		MenuRedirectEnabled: true, MasterMenuURL: "https://cdn.example.fr/m.pdf",
		Redirects:     map[string]Redirect{"midi": {FR: "https://x/a.pdf", EN: "https://x/b.pdf"}, "soir": {FR: "https://x/c.pdf"}},
		Establishment: doc(`{"slug":"chez-alice","name":"Chez é \"Alice\"\u2028"}`, "\x1f\x8best"),
		Hours:         doc(`{"business_hours":[]}`, ""),
		Menus:         Variants{All: menu, FR: menu, EN: doc(`[{"slug":"midi","name":"Lunch"}]`, "")},
		MenuDetails: map[string]Variants{
			"midi": {All: detail, FR: detail, EN: detail},
			"soir": {All: detail, FR: doc(`{"sections":[]}`, "")},
		},
		JSONLD: Localized{FR: doc(`{"@type":"Restaurant"}`, "\x1f\x8bld")},
	}
}

// within reports whether p lies in value's bytes.
func within(p, value []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(value)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= start && at+uintptr(len(p)) <= start+uintptr(len(value))
}

func TestBinaryFormRoundTrips(t *testing.T) {
	for name, b := range map[string]*Bundle{"every field": sampleBinary(), "empty": {}, "draft": {Slug: "a", Status: StatusDraft}} {
		value, err := EncodeBundle(b)
		if err != nil {
			t.Fatal(err)
		}
		if !IsBinary(value) {
			t.Fatalf("%s: EncodeBundle wrote %q, not the binary form", name, value[:min(len(value), 16)])
		}
		var shared, copied Bundle
		if _, err := DecodeShared(value, &shared, nil); err != nil {
			t.Fatalf("%s: DecodeShared: %v", name, err)
		}
		if err := Decode(value, &copied); err != nil {
			t.Fatalf("%s: Decode: %v", name, err)
		}
		if !reflect.DeepEqual(&shared, b) || !reflect.DeepEqual(&copied, b) {
			t.Fatalf("%s: decoded\n%+v\n%+v\nwant\n%+v", name, shared, copied, *b)
		}
		if b.Slug != "" && (!within(unsafe.Slice(unsafe.StringData(shared.Slug), len(shared.Slug)), value) ||
			within(unsafe.Slice(unsafe.StringData(copied.Slug), len(copied.Slug)), value)) {
			t.Errorf("%s: DecodeShared must share the value's bytes, Decode must not", name)
		}
	}
}

func TestBinaryFormStoresEqualDocumentsOnce(t *testing.T) {
	b := sampleBinary()
	value, err := EncodeBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Document{b.Menus.All, b.MenuDetails["midi"].All, b.Establishment} {
		if n := bytes.Count(value, d.Body); n != 1 {
			t.Errorf("body %s stored %d times, want once", d.Body, n)
		}
	}
	var got Bundle
	if _, err := DecodeShared(value, &got, nil); err != nil {
		t.Fatal(err)
	}
	same := func(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) && within(a, value) }
	if !same(got.Menus.All.Body, got.Menus.FR.Body) || !same(got.MenuDetails["midi"].EN.Gzip, got.MenuDetails["soir"].All.Gzip) {
		t.Errorf("equal documents do not share the value's bytes")
	}
	if same(got.Menus.All.Body, got.Menus.EN.Body) {
		t.Errorf("different documents share their bytes")
	}
}

// TestBinaryFormRefusesMalformedValues checks that a value cut short, with bytes after it, or
// whose parts contradict the form, is refused with errBinary, leaving the bundle empty.
func TestBinaryFormRefusesMalformedValues(t *testing.T) {
	value, err := EncodeBundle(sampleBinary())
	if err != nil {
		t.Fatal(err)
	}
	header := func(slug string, rest ...byte) []byte {
		v := append([]byte(binaryMagic), byte(len(slug)))
		v = append(v, slug...)
		return append(v, rest...)
	}
	// After the slug: revision, sequence, base, starts, status, flags, key hash, master URL.
	access := []byte{2, 0, 0, 0, 0, 0, 0, 0}
	cases := map[string][]byte{
		"magic alone":          []byte(binaryMagic),
		"cut short":            value[:len(value)-3],
		"a byte after it":      append(bytes.Clone(value), 0),
		"slug not UTF-8":       header("\xff"),
		"unknown flags":        header("a", 2, 0, 0, 0, 0, 4),
		"too many redirects":   header("a", append(access, 0x7f)...),
		"menu types unordered": header("a", append(access, 0, 2, 1, 'b', 1, 'a')...),
		"redirect twice":       header("a", append(access, 2, 1, 'a', 0, 0, 1, 'a', 0, 0, 0)...),
		"forward reference":    header("a", append(access, 0, 0, 2)...),
		"reference too far":    header("a", append(access, 0, 0, 0, 3)...),
		"body longer than all": header("a", append(access, 0, 0, 1, 0x7f)...),
	}
	for name, v := range cases {
		var b Bundle
		if _, err := DecodeShared(v, &b, nil); !errors.Is(err, errBinary) {
			t.Errorf("%s: DecodeShared error %v, want a malformed bundle", name, err)
		}
		if err := Decode(v, &b); !errors.Is(err, errBinary) {
			t.Errorf("%s: Decode error %v, want a malformed bundle", name, err)
		}
		if !reflect.DeepEqual(b, Bundle{}) {
			t.Errorf("%s: a refused value left %+v", name, b)
		}
	}
	var subset etagsOnly
	if err := Decode(value, &subset); !errors.Is(err, errBinary) {
		t.Errorf("Decode into a subset of the fields: error %v, want one", err)
	}
}

// FuzzDecodeBinary decodes any bytes after the magic: nothing panics, and what is accepted is
// written back to a value that decodes to the same bundle.
func FuzzDecodeBinary(f *testing.F) {
	value, err := EncodeBundle(sampleBinary())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(value[len(binaryMagic):])
	f.Add([]byte{1, 'a', 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, rest []byte) {
		v := append([]byte(binaryMagic), rest...)
		var b Bundle
		if _, err := DecodeShared(v, &b, nil); err != nil {
			return
		}
		again, err := EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		var b2 Bundle
		if err := Decode(again, &b2); err != nil || !reflect.DeepEqual(normal(&b), normal(&b2)) {
			t.Fatalf("%q decodes to\n%+v\nwritten back and decoded:\n%+v (%v)", v, b, b2, err)
		}
	})
}

// FuzzEncodeBinary writes bundles of any strings and bodies and reads them back.
func FuzzEncodeBinary(f *testing.F) {
	f.Add("chez-alice", int64(7), "active", "https://x/a.pdf", "midi", `{"a":1}`, `{"a":1}`, "\x1f\x8b")
	f.Add("", int64(-1), "\xff", "", "", "", `{}`, "")
	f.Fuzz(func(t *testing.T, slug string, revision int64, status, url, menuType, body1, body2, gz string) {
		d1, d2 := doc(body1, gz), doc(body2, "")
		b := &Bundle{Slug: slug, Revision: revision, Sequence: uint64(revision), Status: status, MasterMenuURL: url,
			Redirects: map[string]Redirect{menuType: {FR: url}}, Establishment: d1, Hours: d2,
			Menus: Variants{All: d1, FR: d2, EN: d1}, MenuDetails: map[string]Variants{menuType: {EN: d2}}, JSONLD: Localized{EN: d1}}
		value, err := EncodeBundle(b)
		if !utf8.ValidString(slug) || !utf8.ValidString(status) || !utf8.ValidString(url) || !utf8.ValidString(menuType) {
			if err == nil {
				t.Fatalf("a string not UTF-8 was written: %+v", b)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var got Bundle
		if err := Decode(value, &got); err != nil || !reflect.DeepEqual(normal(&got), normal(b)) {
			t.Fatalf("decoded\n%+v (%v)\nwant\n%+v", got, err, *b)
		}
	})
}

// normal returns b with its empty bodies and codings nil and its empty maps nil, as the binary
// form decodes them.
func normal(b *Bundle) Bundle {
	n := *b
	fix := func(d *Document) {
		if len(d.Body) == 0 {
			d.Body = nil
		}
		if len(d.Gzip) == 0 {
			d.Gzip = nil
		}
	}
	vars := func(v Variants) Variants {
		fix(&v.All)
		fix(&v.FR)
		fix(&v.EN)
		return v
	}
	fix(&n.Establishment)
	fix(&n.Hours)
	n.Menus = vars(n.Menus)
	fix(&n.JSONLD.FR)
	fix(&n.JSONLD.EN)
	if len(n.Redirects) == 0 {
		n.Redirects = nil
	}
	details := n.MenuDetails
	n.MenuDetails = nil
	for k, v := range details {
		if n.MenuDetails == nil {
			n.MenuDetails = map[string]Variants{}
		}
		n.MenuDetails[k] = vars(v)
	}
	return n
}
