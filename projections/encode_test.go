package projections

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/opencarte/publisher/projections/dockey"
)

// encodeBundleWithEncodingJSON is the reference EncodeBundle stands for.
func encodeBundleWithEncodingJSON(tb testing.TB, b *dockey.Bundle) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		tb.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestEncodeBundleWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, path := range []string{"../cmd/publisher/demo.json", "testdata/dated/snapshot.json", "testdata/uploaded-only/snapshot.json"} {
		for _, compressed := range []bool{false, true} {
			b := Render(fixture(t, path, date(t, "2026-11-22")), 42)
			if compressed {
				compress(&b)
			}
			got, err := EncodeBundle(&b)
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeBundleWithEncodingJSON(t, &b); !bytes.Equal(got, want) {
				t.Errorf("%s (compressed %v): EncodeBundle differs from encoding/json:\n got %.300s\nwant %.300s", path, compressed, got, want)
			}
		}
	}
	// The skeleton sizeBound encodes: no bodies, no tags.
	var empty dockey.Bundle
	got, _ := EncodeBundle(&empty)
	if want := encodeBundleWithEncodingJSON(t, &empty); !bytes.Equal(got, want) {
		t.Errorf("empty bundle: got %s, want %s", got, want)
	}
}

// FuzzEncodeBundle checks EncodeBundle against encoding/json on bundles of any strings, with
// bodies that are compact JSON as Render makes them.
func FuzzEncodeBundle(f *testing.F) {
	f.Add("chez-alice", int64(7), "active", true, "0123abcd", false, "https://x/a b.pdf", "midi", "https://x/fr", "", `"0011"`, "café <b>&</b>", []byte{1, 2, 3})
	f.Add("", int64(-1), "", false, "", true, "", "", "", "https://x/en", "", "\x00\u2028\xff\"\\", []byte(nil))
	f.Fuzz(func(t *testing.T, slug string, rev int64, status string, api bool, keyHash string, redirect bool,
		master, menuType, fr, en, etag, text string, gz []byte) {
		body, err := json.Marshal(map[string]any{"text": text, "n": rev, "list": []string{text, etag}})
		if err != nil {
			t.Fatal(err)
		}
		// encoding/json's HTML escaping of the marshaled body is undone: bodies are not escaped.
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		var v any
		_ = json.Unmarshal(body, &v)
		_ = enc.Encode(v)
		doc := dockey.Document{Body: bytes.TrimSuffix(compact.Bytes(), []byte("\n")), ETag: etag, Gzip: gz}
		b := dockey.Bundle{
			Slug: slug, Revision: rev, Status: status, APIEnabled: api, KeyHash: keyHash,
			MenuRedirectEnabled: redirect, MasterMenuURL: master,
			Establishment: doc, Hours: dockey.Document{ETag: etag},
			Menus: dockey.Variants{All: doc, FR: doc, EN: dockey.Document{}},
		}
		if fr != "" || en != "" || menuType != "" {
			b.Redirects = map[string]dockey.Redirect{menuType: {FR: fr, EN: en}, menuType + "-2": {EN: fr}}
			b.MenuDetails = map[string]dockey.Variants{menuType: {All: doc}, text: {EN: doc}}
		}
		got, err := EncodeBundle(&b)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeBundleWithEncodingJSON(t, &b); !bytes.Equal(got, want) {
			t.Fatalf("EncodeBundle differs from encoding/json:\n got %q\nwant %q", got, want)
		}
	})
}
