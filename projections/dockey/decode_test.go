package dockey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	gojson "github.com/goccy/go-json"
)

// A subset of the fields, as a reader that skips the documents declares it.
type etagsOnly struct {
	Slug          string `json:"slug"`
	Establishment struct {
		ETag string `json:"etag"`
	} `json:"establishment"`
	MenuDetails map[string]struct {
		All struct {
			ETag string `json:"etag"`
		} `json:"all"`
	} `json:"menu_details"`
}

const sampleBundle = `{"slug":"chez-alice","content_revision":7,"log_sequence":5,"status":"active","public_api_enabled":true,` +
	`"key_hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","menu_redirect_enabled":true,` +
	`"master_menu_url":"https://cdn.example.fr/m.pdf","redirects":{"midi":{"fr":"https://x/a.pdf","en":"https://x/b.pdf"}},` +
	`"establishment":{"body":{"slug":"chez-alice","name":"Chez \u00e9 \"Alice\"","n":[1,2.5e3,-0.1,true,null]},"etag":"\"00000000000000aa\"","gzip":"H4sIAAAAAAAA/w=="},` +
	`"hours":{"body":{},"etag":"\"00000000000000bb\""},` +
	`"menus":{"all":{"body":[],"etag":"\"1\""},"fr":{"body":[],"etag":"\"2\""},"en":{"body":[],"etag":"\"3\""}},` +
	`"menu_details":{"midi":{"all":{"body":{"a":"b"},"etag":"\"4\""},"fr":{"body":{},"etag":"\"5\""},"en":{"body":{},"etag":"\"6\""}}}}`

// taggedBundle is a bundle whose bodies carry their own entity tags, as the projector writes them.
var taggedBundle = func() string {
	tag := func(body string) string { return fmt.Sprintf(`"\"%016x\""`, xxhash.Sum64String(body)) }
	const est, hours, menus = `{"slug":"chez-alice","name":"Chez \u00e9 \"Alice\""}`, `{"business_hours":[]}`, `[{"slug":"midi"}]`
	return `{"slug":"chez-alice","content_revision":7,"log_sequence":5,"status":"active","public_api_enabled":true,` +
		`"key_hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","menu_redirect_enabled":true,` +
		`"redirects":{"midi":{"fr":"https://x/a.pdf"}},` +
		`"establishment":{"body":` + est + `,"etag":` + tag(est) + `,"gzip":"H4sIAAAAAAAA/w=="},` +
		`"hours":{"body":` + hours + `,"etag":` + tag(hours) + `},` +
		`"menus":{"all":{"body":` + menus + `,"etag":` + tag(menus) + `},"fr":{"body":` + menus + `,"etag":` + tag(menus) + `},"en":{"body":null,"etag":""}},` +
		`"menu_details":{"midi":{"all":{"body":{},"etag":` + tag(`{}`) + `}}}}`
}()

// FuzzDecode checks Decode against encoding/json: the same values accepted, decoded the same,
// into a whole Bundle and into a subset of its fields.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sampleBundle))
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"slug":1}`, `{"slug":"a",}`, `{"establishment":{"body":{"a":1,}}}`,
		`{"establishment":{"body":"\x"}}`, "{\"establishment\":{\"body\":\"\x01\"}}", `{"establishment":{"body":01}}`,
		`{"establishment":{"body":"\ud800"}}`, `{"establishment":{"gzip":"!!"}}`, `{"establishment":{"gzip":"QQ=="}}`,
		`{"establishment":{"gzip":"QQ\r\n=="}}`, `{"content_revision":1e3}`, `{"content_revision":9223372036854775808}`,
		`{"SLUG":"a","Slug":"b"}`, `{"slug":"a","slug":"b"}`, `{"redirects":{"a":null}}`, `{"menu_details":{"":{}}}`,
		"{\"slug\":\"\xff\"}", `{"slug":"a"} x`, ` {"slug":"a"} `, `{"hours":{"body":}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		var want, got Bundle
		wantErr := json.Unmarshal(value, &want)
		gotErr := Decode(value, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("Decode(%q): error %v, encoding/json: %v", value, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q):\n got %+v\nwant %+v", value, got, want)
		}
		var wantSub, gotSub etagsOnly
		wantErr = json.Unmarshal(value, &wantSub)
		gotErr = Decode(value, &gotSub)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("Decode(%q) into a subset: error %v, encoding/json: %v", value, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(gotSub, wantSub) {
			t.Fatalf("Decode(%q) into a subset:\n got %+v\nwant %+v", value, gotSub, wantSub)
		}
	})
}

func TestDecodeLeavesNothingOfARefusedValue(t *testing.T) {
	// A value goccy refuses halfway must not leave its first fields behind for encoding/json's
	// second decoding to keep.
	b := Bundle{Slug: "old", Revision: 3}
	if err := Decode([]byte(`{"slug":"new","content_revision":"x"}`), &b); err == nil {
		t.Fatal("a string revision was accepted")
	}
	var want Bundle
	_ = json.Unmarshal([]byte(`{"slug":"new","content_revision":"x"}`), &want)
	if !reflect.DeepEqual(b, want) {
		t.Errorf("after a refused value: got %+v, want %+v as encoding/json leaves it", b, want)
	}
}

// FuzzDecodeShared checks DecodeShared against encoding/json on any value, carrying the buffer
// from one call to the next as a mirror does: the same values accepted, decoded the same, but for
// the one value the walk takes that encoding/json refuses, a body that is not JSON and carries its
// own entity tag.
func FuzzDecodeShared(f *testing.F) {
	f.Add([]byte(sampleBundle))
	f.Add([]byte(taggedBundle))
	for _, s := range []string{
		"{\"slug\":\"a\tb\"}", `{"content_revision":+1}`, `{"content_revision":01}`, `{"log_sequence":-0}`,
		`{"public_api_enabled":tru}`, `{"hours":{"body":{"a":1},"etag":"\"0000000000000000\""}}`,
		`{"hours":{"body":{"a":},"etag":"\"0000000000000000\""}}`, `{"menus":{"fr":{"body":[1,,2]}}}`, `{"hours":{"body":tru}}`,
		`{}`, `null`, `{"slug":"a","slug":"b"}`, `{"Slug":"a"}`, `{"slug":"a\u0062"}`, `{"slug":null}`,
		`{"content_revision":1e3}`, `{"content_revision":-0}`, `{"content_revision":1.0}`, `{"log_sequence":-1}`,
		`{"public_api_enabled":null}`, `{"redirects":{}}`, `{"redirects":null}`, `{"redirects":{"a":{},"a":{"fr":"x"}}}`,
		`{"redirects":{"a":{"fr":"x","de":"y"}}}`, `{"menu_details":{"m":{"all":{"body":null}}}}`,
		`{"hours":{"body":"x\"}{","etag":""}}`, `{"hours":{"body":[{"a":"]"}],"gzip":""}}`, `{"hours":{"gzip":"QQ="}}`,
		`{"hours":{"gzip":"QUJD","body":1}, "menus" : { "fr" : { "body" : true } } }`, "{\"slug\":\"\xff\"}",
		`{"establishment":{"gzip":"QQ==","etag":"a"},"hours":{"gzip":"QkJC"},"menus":{"all":{"gzip":"Q0NDQ0NDQ0NDQ0ND"}}}`,
		`{"x":1}`, `{"slug":"a"} x`, ` {"slug":"a"} `, `{"slug":"a\"b"}`, `{"hours":{"etag":"\"x\\\/\b\f\n\r\t\""}}`,
		`{"slug":"\u00e9"}`, `{"slug":"\ud800"}`, `{"slug":"\q"}`, `{"redirects":{"a\"":{"fr":"\/"}}}`,
		// Objects met twice, which encoding/json merges.
		`{"redirects":{"a":{"fr":"x"}},"redirects":{"b":{"en":"y"}}}`,
		`{"menu_details":{"a":{"all":{"body":{}}}},"menu_details":{"b":{"fr":{"body":[]}}}}`,
		`{"hours":{"body":{}},"hours":{"etag":"x"}}`,
		// A body holding what follows a body, cut there by the walk.
		`{"hours":{"body":{"a":{},"etag":"\"0000000000000000\""},"etag":"\"0000000000000000\""}}`,
		`{"hours":{"body":{"a":{},"etag":"x"}},"etag":""}}`,
	} {
		f.Add([]byte(s))
	}
	var scratch []byte
	f.Fuzz(func(t *testing.T, value []byte) {
		var want, got Bundle
		wantErr := json.Unmarshal(value, &want)
		var gotErr error
		scratch, gotErr = DecodeShared(value, &got, scratch)
		checkShared(t, value, &got, gotErr, &want, wantErr)
	})
}

// FuzzDecodeSharedTagged gives the bodies of a value their own entity tags, so that the walk,
// not the fallback to Decode, decides, and checks it as FuzzDecodeShared does. A value whose
// bodies are JSON, framed without spaces, and whose strings have no \u escapes, the walk must
// take: its bodies then share the value's bytes.
func FuzzDecodeSharedTagged(f *testing.F) {
	f.Add("chez-alice", int64(7), []byte(`{"slug":"chez-alice","n":[1,2.5e3,-0.1,true,null]}`), []byte(`[]`), []byte("H4sIAAAAAAAA/w=="))
	f.Add("x", int64(-1), []byte(`"a\"}"`), []byte(`null`), []byte(""))
	f.Add("é", int64(0), []byte(`{"a":"}`), []byte(`{}}`), []byte("QQ=="))
	f.Add("a<b", int64(1), []byte(` {}`), []byte(`[1,]`), []byte("!!"))
	f.Add("a", int64(1), []byte(`{"a":[{"b":"]"}]}`), []byte(`1e5`), []byte("QUJD"))
	// Bodies holding a member "etag" after an object, where the walk first cuts them.
	f.Add("a", int64(1), []byte(`{"a":{},"etag":"\"0000000000000000\""}`), []byte(`{"b":{},"etag":"x"}`), []byte(""))
	var scratch []byte
	f.Fuzz(func(t *testing.T, slug string, rev int64, est, hours, gzip []byte) {
		quote := func(s string) string {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s)
			return strings.TrimSuffix(buf.String(), "\n")
		}
		tag := func(body []byte) string { return quote(fmt.Sprintf(`"%016x"`, xxhash.Sum64(body))) }
		value := []byte(fmt.Sprintf(`{"slug":%s,"content_revision":%d,"establishment":{"body":%s,"etag":%s,"gzip":%s},"hours":{"etag":%s,"body":%s}}`,
			quote(slug), rev, est, tag(est), quote(string(gzip)), tag(hours), hours))
		var want, got Bundle
		wantErr := json.Unmarshal(value, &want)
		var gotErr error
		scratch, gotErr = DecodeShared(value, &got, scratch)
		checkShared(t, value, &got, gotErr, &want, wantErr)
		framed := func(b []byte) bool { return json.Valid(b) && len(bytes.TrimSpace(b)) == len(b) }
		if wantErr == nil && framed(est) && framed(hours) && !bytes.Contains([]byte(quote(slug)), []byte(`\u`)) {
			if within := func(p []byte) bool {
				at, start := uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(unsafe.Pointer(unsafe.SliceData(value)))
				return at >= start && at+uintptr(len(p)) <= start+uintptr(len(value))
			}; !within(got.Establishment.Body) || !within(got.Hours.Body) {
				t.Fatalf("DecodeShared(%q): a tagged value of JSON bodies was not walked", value)
			}
		}
	})
}

// checkShared fails t unless DecodeShared's outcome on value (got, gotErr) is encoding/json's
// (want, wantErr), or accepts a body that is not JSON but carries its own tag.
func checkShared(t *testing.T, value []byte, got *Bundle, gotErr error, want *Bundle, wantErr error) {
	t.Helper()
	switch {
	case gotErr != nil && wantErr == nil:
		t.Fatalf("DecodeShared(%q): error %v, encoding/json none", value, gotErr)
	case gotErr == nil && wantErr != nil:
		// encoding/json must refuse the value for its first syntax error, and that error must lie
		// in a body that is not JSON and carries its own tag (or just after it).
		var syntax *json.SyntaxError
		excused := false
		if errors.As(wantErr, &syntax) {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(value)))
			eachDoc(got, func(d *Document) {
				if len(d.Body) == 0 || json.Valid(d.Body) || !Tagged(d.Body, d.ETag) {
					return
				}
				at := int64(uintptr(unsafe.Pointer(unsafe.SliceData(d.Body))) - start)
				excused = excused || at <= syntax.Offset && syntax.Offset <= at+int64(len(d.Body))+1
			})
		}
		if !excused {
			t.Fatalf("DecodeShared(%q): accepted, encoding/json: %v", value, wantErr)
		}
	case gotErr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("DecodeShared(%q):\n got %+v\nwant %+v", value, got, want)
	}
}

// eachDoc calls fn with every document of b.
func eachDoc(b *Bundle, fn func(*Document)) {
	variants := func(v *Variants) { fn(&v.All); fn(&v.FR); fn(&v.EN) }
	fn(&b.Establishment)
	fn(&b.Hours)
	variants(&b.Menus)
	for _, v := range b.MenuDetails {
		variants(&v)
	}
}

func TestTagged(t *testing.T) {
	body := []byte(`{"slug":"chez-alice"}`)
	tag := fmt.Sprintf(`"%016x"`, xxhash.Sum64(body))
	for _, tc := range []struct {
		body []byte
		etag string
		want bool
	}{
		{body, tag, true},
		{body, strings.ToUpper(tag), tag == strings.ToUpper(tag)},
		{body, tag[1:17], false},
		{body, "W/" + tag, false},
		{body, `"` + strings.Repeat("0", 16) + `"`, false},
		{append(body, ' '), tag, false},
		{nil, fmt.Sprintf(`"%016x"`, xxhash.Sum64(nil)), true},
		{body, `"` + strings.Repeat("g", 16) + `"`, false},
	} {
		if got := Tagged(tc.body, tc.etag); got != tc.want {
			t.Errorf("Tagged(%q, %s) = %t, want %t", tc.body, tc.etag, got, tc.want)
		}
	}
}

// FuzzValid checks goccy's Valid, on which events.ValidJSON relies (Encode before it copies a
// payload as it is, the projector before it stores a document), against encoding/json's.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		sampleBundle, `{}`, `[]`, `01`, `+1`, `-`, `1e`, `"\u12"`, "\"\x01\"", "\"\xff\"", "\ufeff{}", "{}\x00",
		"{\"a\":\"\\/\"}", `{"a":1,}`, `[1,]`, ` {} `, "\f{}", `{"a" 1}`, `nul`, `truex`, `"\ud800"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		if got, want := gojson.Valid(value), json.Valid(value); got != want {
			t.Fatalf("Valid(%q): goccy %v, encoding/json %v", value, got, want)
		}
	})
}

func TestTaggedBundleIsWalked(t *testing.T) {
	value := []byte(taggedBundle)
	var b Bundle
	if _, err := DecodeShared(value, &b, nil); err != nil {
		t.Fatal(err)
	}
	at, start := uintptr(unsafe.Pointer(unsafe.SliceData(b.Establishment.Body))), uintptr(unsafe.Pointer(unsafe.SliceData(value)))
	if at < start || at >= start+uintptr(len(value)) {
		t.Fatalf("the tagged bundle was not walked")
	}
}

// BenchmarkDecodeShared decodes a bundle of documents of the size of a generated establishment's
// (about 40 kB of bodies, 14 documents), as a read node does for every bundle it loads: in the
// binary form EncodeBundle writes, and in the JSON form of earlier versions.
func BenchmarkDecodeShared(b *testing.B) {
	var items []string
	for i := range 60 {
		items = append(items, fmt.Sprintf(`{"name":"Plat n°%d, \"maison\"","description":"Légumes du marché, sauce {vierge} et [herbes]","price":{"amount":"%d.50","currency":"EUR"},"allergens":["gluten","lait"]}`, i, 10+i))
	}
	body := []byte(`{"slug":"chez-alice","content_revision":7,"sections":[{"name":"Plats","items":[` + strings.Join(items, ",") + `]}]}`)
	doc := func(n int) Document {
		body := append([]byte(fmt.Sprintf(`{"n":%d,`, n)), body[1:]...) // documents that differ
		return Document{Body: body, ETag: fmt.Sprintf(`"%016x"`, xxhash.Sum64(body)), Gzip: bytes.Repeat([]byte{0x1f, 0x8b, byte(n)}, len(body)/15)}
	}
	bundle := &Bundle{Slug: "chez-alice", Revision: 7, Status: StatusActive, APIEnabled: true,
		Establishment: doc(0), Hours: doc(1), Menus: Variants{All: doc(2), FR: doc(3), EN: doc(4)},
		MenuDetails: map[string]Variants{"la-carte": {All: doc(5), FR: doc(6), EN: doc(7)}, "vins": {All: doc(8), FR: doc(9), EN: doc(10)}},
		JSONLD:      Localized{FR: doc(11), EN: doc(12)}}
	binaryValue, err := EncodeBundle(bundle)
	if err != nil {
		b.Fatal(err)
	}
	var jsonValue bytes.Buffer
	enc := json.NewEncoder(&jsonValue)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(bundle); err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name  string
		value []byte
	}{{"binary", binaryValue}, {"json", bytes.TrimSuffix(jsonValue.Bytes(), []byte("\n"))}} {
		b.Run(form.name, func(b *testing.B) {
			value := form.value
			var scratch []byte
			var got Bundle
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if scratch, err = DecodeShared(value, &got, scratch); err != nil {
					b.Fatal(err)
				}
			}
			at, start := uintptr(unsafe.Pointer(unsafe.SliceData(got.Hours.Body))), uintptr(unsafe.Pointer(unsafe.SliceData(value)))
			if at < start || at >= start+uintptr(len(value)) || !bytes.Equal(got.Hours.Body, bundle.Hours.Body) {
				b.Fatal("the bundle was not walked")
			}
		})
	}
}
