package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// goldenCases render the snapshot of each case on the date in testdata/<name>/today.
var goldenCases = []struct {
	name     string
	snapshot string
}{
	{"demo", "../cmd/publisher/demo.json"},
	{"uploaded-only", "testdata/uploaded-only/snapshot.json"},
	{"dated", "testdata/dated/snapshot.json"},
	// The same as uploaded-only, in draft: its bundle holds no document.
	{"draft", "testdata/draft/snapshot.json"},
}

// goldenRevision stamps the golden documents.
const goldenRevision = 1

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			b := Render(fixture.Load(t, tc.snapshot, fixture.ReadToday(t, dir)), goldenRevision)
			got := goldenFiles(t, &b)

			existing, err := filepath.Glob(filepath.Join(dir, "*.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range existing {
				name := filepath.Base(path)
				if _, ok := got[name]; ok || name == "snapshot.json" {
					continue
				}
				if *updateGolden {
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
					continue
				}
				t.Errorf("%s: golden file of a document that is not rendered", path)
			}
			for _, name := range slices.Sorted(maps.Keys(got)) {
				path := filepath.Join(dir, name)
				if *updateGolden {
					if err := os.WriteFile(path, got[name], 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("%s: %v (run go test ./projections -update)", path, err)
					continue
				}
				if !bytes.Equal(got[name], want) {
					t.Errorf("%s differs (run go test ./projections -update and review the diff)\ngot:  %s\nwant: %s", path, got[name], want)
				}
			}
		})
	}
}

// goldenFiles returns every document of b under its golden file name, and access.json: the
// access fields and entity tags, indented for review.
func goldenFiles(tb testing.TB, b *dockey.Bundle) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	etags := map[string]string{}
	add := func(name string, d dockey.Document) {
		if len(d.Body) == 0 {
			return // absent
		}
		files[name] = d.Body
		etags[name] = d.ETag
	}
	addVariants := func(prefix string, v dockey.Variants) {
		add(prefix+".all.json", v.All)
		add(prefix+".fr.json", v.FR)
		add(prefix+".en.json", v.EN)
	}
	add("establishment.json", b.Establishment)
	add("hours.json", b.Hours)
	addVariants("menus", b.Menus)
	for slug, v := range b.MenuDetails {
		addVariants("menu."+slug, v)
	}
	add("jsonld.fr.json", b.JSONLD.FR)
	add("jsonld.en.json", b.JSONLD.EN)
	access := struct {
		Slug                string                     `json:"slug"`
		Revision            int64                      `json:"content_revision"`
		Status              string                     `json:"status"`
		APIEnabled          bool                       `json:"public_api_enabled"`
		KeyHash             string                     `json:"key_hash"`
		MenuRedirectEnabled bool                       `json:"menu_redirect_enabled"`
		MasterMenuURL       string                     `json:"master_menu_url"`
		Redirects           map[string]dockey.Redirect `json:"redirects"`
		ETags               map[string]string          `json:"etags"`
	}{b.Slug, b.Revision, b.Status, b.APIEnabled, b.KeyHash, b.MenuRedirectEnabled, b.MasterMenuURL, b.Redirects, etags}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(access); err != nil {
		tb.Fatal(err)
	}
	files["access.json"] = buf.Bytes()
	return files
}

var etagPattern = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

// TestDocumentsWellFormed checks what every document of every case shares: valid compact JSON,
// an entity tag of its own bytes; the bundle's revision and no escaped HTML characters in every
// document of the specification, and the reverse in the JSON-LD, which holds no revision and
// goes into an HTML script element: no <, > or & but escaped.
func TestDocumentsWellFormed(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			b := Render(fixture.Load(t, tc.snapshot, fixture.ReadToday(t, filepath.Join("testdata", tc.name))), 123456789)
			for name, body := range goldenFiles(t, &b) {
				if name == "access.json" {
					continue
				}
				var doc struct {
					Revision *int64 `json:"content_revision"`
				}
				if err := json.Unmarshal(body, &doc); err != nil {
					t.Errorf("%s: not JSON: %v", name, err)
					continue
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, body); err != nil || !bytes.Equal(compact.Bytes(), body) {
					t.Errorf("%s: not compact JSON", name)
				}
				if strings.HasPrefix(name, "jsonld.") {
					if doc.Revision != nil || strings.ContainsAny(string(body), "<>&") {
						t.Errorf("%s: a revision or an unescaped <, > or & in %s", name, body)
					}
					continue
				}
				if doc.Revision == nil || *doc.Revision != 123456789 {
					t.Errorf("%s: content_revision %v, want 123456789", name, doc.Revision)
				}
				if strings.Contains(string(body), `\u00`) {
					t.Errorf("%s: escaped characters in %s", name, body)
				}
			}
			docs := []dockey.Document{b.Establishment, b.Hours, b.Menus.All, b.Menus.FR, b.Menus.EN, b.JSONLD.FR, b.JSONLD.EN}
			for _, v := range b.MenuDetails {
				docs = append(docs, v.All, v.FR, v.EN)
			}
			for _, d := range docs {
				if len(d.Body) == 0 && b.Status != string(domain.StatusActive) {
					continue // nothing of it is public
				}
				if !etagPattern.MatchString(d.ETag) || d.ETag != ETag(d.Body) {
					t.Errorf("etag %s of %s: want %s", d.ETag, d.Body[:40], ETag(d.Body))
				}
			}
		})
	}
}

// TestRenderRevisionFollowsTheGoldens fails when the rendering of the golden establishments
// changes while renderRevision stays: a projector resuming from a checkpoint of the previous
// renderer would otherwise keep serving what it rendered.
func TestRenderRevisionFollowsTheGoldens(t *testing.T) {
	// The fingerprint of the golden documents each renderer renders.
	fingerprints := map[int]string{
		1: "1baa4ccc94594cf45f4d8c05aaf85f98b920eb4c1bea3058ca7644f680bbe853",
		2: "a1642bf467a8f859cb1cdef9e27c853319baad134c0f247928759920cec0108e", // a draft holds no document
		3: "23e78154827d59cbf91253f748ac7e397388981f5c1b1de054eba4f83fe9a3a8", // the JSON-LD documents
	}
	h := sha256.New()
	for _, tc := range goldenCases {
		b := Render(fixture.Load(t, tc.snapshot, fixture.ReadToday(t, "testdata/"+tc.name)), goldenRevision)
		files := goldenFiles(t, &b)
		for _, name := range slices.Sorted(maps.Keys(files)) {
			fmt.Fprintf(h, "%s/%s %d\n", tc.name, name, len(files[name]))
			h.Write(files[name])
		}
	}
	got := hex.EncodeToString(h.Sum(nil))
	if fingerprints[RenderRevision] != got {
		t.Errorf("the golden documents of render revision %d have fingerprint %s, recorded %q: if the rendering changed, raise RenderRevision and record the new fingerprint under it", RenderRevision, got, fingerprints[RenderRevision])
	}
}
