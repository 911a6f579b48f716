package dockey

import (
	"encoding/json"
	"reflect"
	"testing"

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

// FuzzDecodeShared checks DecodeShared against encoding/json as FuzzDecode checks Decode, with a
// scratch buffer carried from one value to the next as a reader carries it.
func FuzzDecodeShared(f *testing.F) {
	f.Add([]byte(sampleBundle))
	for _, s := range []string{
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
	} {
		f.Add([]byte(s))
	}
	var scratch []byte
	f.Fuzz(func(t *testing.T, value []byte) {
		var want, got Bundle
		wantErr := json.Unmarshal(value, &want)
		var gotErr error
		scratch, gotErr = DecodeShared(value, &got, scratch)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("DecodeShared(%q): error %v, encoding/json: %v", value, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeShared(%q):\n got %+v\nwant %+v", value, got, want)
		}
	})
}

// FuzzValid checks goccy's Valid, on which DecodeShared relies before it walks a value, against
// encoding/json's.
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
