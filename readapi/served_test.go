package readapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/opencarte/publisher/projections/dockey"
)

func TestNewEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(b *dockey.Bundle)
		wantErr string // a fragment of the error; empty when the bundle is valid
	}{
		{name: "complete", edit: func(*dockey.Bundle) {}},
		{name: "draft without documents", edit: func(b *dockey.Bundle) {
			*b = dockey.Bundle{Slug: b.Slug, Revision: 1, Status: dockey.StatusDraft}
		}},
		{name: "api disabled without documents or key", edit: func(b *dockey.Bundle) {
			*b = dockey.Bundle{Slug: b.Slug, Revision: 1, Status: dockey.StatusActive, MasterMenuURL: "https://x.example/m.pdf"}
		}},
		{name: "null bodies of a draft", edit: func(b *dockey.Bundle) {
			b.Status = dockey.StatusDraft
			b.Hours = dockey.Document{Body: json.RawMessage("null")}
		}},
		{name: "revision zero", edit: func(b *dockey.Bundle) { b.Revision = 0 }},
		{name: "invalid slug", edit: func(b *dockey.Bundle) { b.Slug = "Chez" }, wantErr: `slug "Chez"`},
		{name: "negative revision", edit: func(b *dockey.Bundle) { b.Revision = -1 }, wantErr: "negative"},
		{name: "api enabled without key hash", edit: func(b *dockey.Bundle) { b.KeyHash = "" }, wantErr: "without key_hash"},
		{name: "short key hash", edit: func(b *dockey.Bundle) { b.KeyHash = "abcd" }, wantErr: "key_hash"},
		{name: "key hash not hex", edit: func(b *dockey.Bundle) { b.KeyHash = strings.Repeat("g", 64) }, wantErr: "key_hash"},
		{name: "missing establishment", edit: func(b *dockey.Bundle) { b.Establishment = dockey.Document{} }, wantErr: "establishment: document missing"},
		{name: "null hours", edit: func(b *dockey.Bundle) { b.Hours.Body = json.RawMessage("null") }, wantErr: "hours: document missing"},
		{name: "missing menus variant", edit: func(b *dockey.Bundle) { b.Menus.EN = dockey.Document{} }, wantErr: "menus.en"},
		{name: "missing detail variant", edit: func(b *dockey.Bundle) {
			v := b.MenuDetails["lunch"]
			v.FR = dockey.Document{}
			b.MenuDetails["lunch"] = v
		}, wantErr: "menu_details.lunch.fr"},
		{name: "body not an object", edit: func(b *dockey.Bundle) { b.Hours.Body = json.RawMessage(`[1]`) }, wantErr: "not a JSON object"},
		{name: "etag unquoted", edit: func(b *dockey.Bundle) { b.Hours.ETag = "abc" }, wantErr: "etag"},
		{name: "etag weak", edit: func(b *dockey.Bundle) { b.Hours.ETag = `W/"abc"` }, wantErr: "etag"},
		{name: "etag empty", edit: func(b *dockey.Bundle) { b.Hours.ETag = "" }, wantErr: "etag"},
		{name: "etag with a quote inside", edit: func(b *dockey.Bundle) { b.Hours.ETag = `"a"b"` }, wantErr: "etag"},
		{name: "bad etag of a draft", edit: func(b *dockey.Bundle) {
			b.Status = dockey.StatusDraft
			b.Hours.ETag = "abc"
		}, wantErr: "etag"},
		{name: "master menu url with newline", edit: func(b *dockey.Bundle) { b.MasterMenuURL = "https://x.example/\r\nSet-Cookie: a=b" }, wantErr: "master_menu_url"},
		{name: "redirect url with space", edit: func(b *dockey.Bundle) { b.Redirects["lunch"] = dockey.Redirect{FR: "https://x.example/a b"} }, wantErr: "redirects.lunch.fr"},
		{name: "redirect menu type invalid", edit: func(b *dockey.Bundle) { b.Redirects["Lunch"] = dockey.Redirect{FR: "https://x.example/a"} }, wantErr: `redirects: menu type "Lunch"`},
		{name: "detail menu type invalid", edit: func(b *dockey.Bundle) { b.MenuDetails["a.b"] = testVariants(alice, "x", 7) }, wantErr: `menu_details: menu type "a.b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := testBundle(alice, 7)
			tt.edit(&b)
			e, err := newServed(&b, nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("newEntry: got error %v, want none", err)
			case tt.wantErr == "" && e == nil:
				t.Fatal("newEntry: got a nil entry")
			case tt.wantErr != "" && err == nil:
				t.Fatalf("newEntry: got no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && (!sameErr(err, errInvalidBundle) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("newEntry: got error %q, want errInvalidBundle containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewEntryKeepsStoredBytes(t *testing.T) {
	t.Parallel()
	// Whitespace, escapes and key order inside a stored body are the projector's: served as they
	// are. json.Marshal would compact and re-escape a RawMessage, so the value is spliced by hand.
	const stored = `{ "z":1,  "name":"Fish & Chips \u0026 <b>", "a":[ 1, 2 ] }`
	b := testBundle(alice, 7)
	b.Hours = dockey.Document{Body: json.RawMessage(`{"placeholder":1}`), ETag: `"h1"`}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Replace(string(raw), `{"placeholder":1}`, stored, 1)
	e, err := decodeServed(alice, []byte(value))
	if err != nil {
		t.Fatalf("decodeEntry: %v", err)
	}
	if got := string(e.hours.body); got != stored {
		t.Errorf("hours body: got %q, want %q", got, stored)
	}
	if got, want := e.hours.length[0], strconv.Itoa(len(stored)); got != want {
		t.Errorf("hours length: got %q, want %q", got, want)
	}
	if !e.keyMatches(keyAlice) || e.keyMatches(keyBob) || e.keyMatches("") {
		t.Errorf("keyMatches: want true only for the key of %s", alice)
	}
}

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(testBundle(alice, 7))
	if err != nil {
		t.Fatal(err)
	}
	withUnknownField := strings.Replace(string(good), `{`, `{"added_later":true,`, 1)
	tests := []struct {
		name    string
		slug    string
		value   string
		wantErr bool
	}{
		{name: "valid", slug: alice, value: string(good)},
		{name: "unknown field", slug: alice, value: withUnknownField},
		{name: "under another slug", slug: bob, value: string(good), wantErr: true},
		{name: "not json", slug: alice, value: "not json", wantErr: true},
		{name: "truncated", slug: alice, value: string(good[:len(good)/2]), wantErr: true},
		{name: "empty", slug: alice, value: "", wantErr: true},
		{name: "array", slug: alice, value: "[]", wantErr: true},
		{name: "wrong type", slug: alice, value: `{"slug":"chez-alice","content_revision":"7"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeServed(tt.slug, []byte(tt.value))
			if tt.wantErr && !sameErr(err, errInvalidBundle) {
				t.Errorf("decodeEntry: got %v, want errInvalidBundle", err)
			}
			if !tt.wantErr && err != nil {
				t.Errorf("decodeEntry: got %v, want no error", err)
			}
		})
	}
}
