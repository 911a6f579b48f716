package projections

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

func TestCompressedDocumentsDecodeToTheirBodies(t *testing.T) {
	b := Render(fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22")), 7)
	Compress(&b)
	again := Render(fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22")), 7)
	Compress(&again)
	n := 0
	EachDocument(&b, func(_ string, d *dockey.Document) {
		n++
		if plain := fixture.Gunzip(t, d.Gzip); !bytes.Equal(plain, d.Body) {
			t.Errorf("gzip of %s decodes to %.60q, want the body", d.ETag, plain)
		}
		zr, err := gzip.NewReader(bytes.NewReader(d.Gzip))
		if err != nil || zr.Name != "" || !zr.ModTime.IsZero() {
			t.Errorf("gzip of %s: header names %q, modified %v (%v): want neither", d.ETag, zr.Name, zr.ModTime, err)
		}
	})
	if n != len(fixedDocuments)+3*len(b.MenuDetails) {
		t.Errorf("visited %d documents, want %d", n, len(fixedDocuments)+3*len(b.MenuDetails))
	}
	va, _ := dockey.EncodeBundle(&b)
	vb, _ := dockey.EncodeBundle(&again)
	if !bytes.Equal(va, vb) {
		t.Errorf("two compressions of the same bundle differ: a rebuild would rewrite it")
	}
	if got := dockey.GzipETag(`"0123456789abcdef"`); got != `"0123456789abcdef-gzip"` {
		t.Errorf("GzipETag: got %s", got)
	}
}

// BenchmarkCompressDemo measures the gzip coding of every document of a bundle, paid once per
// written bundle.
func BenchmarkCompressDemo(b *testing.B) {
	bundle := Render(fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22")), 7)
	b.ReportAllocs()
	for b.Loop() {
		c := bundle
		c.MenuDetails = map[string]dockey.Variants{}
		for k, v := range bundle.MenuDetails {
			c.MenuDetails[k] = v
		}
		Compress(&c)
	}
}

// CodingsFrom gives a document the coding of the same document of another bundle when their
// bodies are the same or differ in their revision only, and none otherwise; the codings it gives
// are the ones Compress would have made, so that a bundle stores the same bytes whichever made
// them.
func TestCodingsFrom(t *testing.T) {
	e := fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	stored := Render(e, 7)
	Compress(&stored)

	for _, revision := range []int64{7, 8, 1234567} {
		next := Render(e, revision)
		next.Hours.Body = []byte(`{"content_revision":7,"changed":true}`)
		CodingsFrom(&next, &stored)
		if len(next.Hours.Gzip) != 0 {
			t.Errorf("at revision %d, a document whose body differs after its revision got a coding", revision)
		}
		compressed := Render(e, revision)
		compressed.Hours.Body = next.Hours.Body
		Compress(&compressed)
		Compress(&next)
		want := codings(&compressed)
		EachDocument(&next, func(name string, d *dockey.Document) {
			if !bytes.Equal(d.Gzip, want[name]) {
				t.Errorf("at revision %d, %s: coding differs from the one Compress makes", revision, name)
			}
			if plain := fixture.Gunzip(t, d.Gzip); !bytes.Equal(plain, d.Body) {
				t.Errorf("at revision %d, %s: coding decodes to %.60q, want the body", revision, name, plain)
			}
		})
	}

	// A coding compressed whole, as earlier versions stored them, is not taken at another
	// revision: its compressed bytes may refer to the revision's.
	whole := Render(e, 7)
	EachDocument(&whole, func(_ string, d *dockey.Document) { d.Gzip = stdGzip(t, d.Body) })
	other := Render(e, 8)
	CodingsFrom(&other, &whole)
	EachDocument(&other, func(name string, d *dockey.Document) {
		if jsonld := strings.HasPrefix(name, ResourceJSONLD+"."); jsonld != (len(d.Gzip) > 0) {
			t.Errorf("%s at another revision, from codings compressed whole: coding given %t, want %t", name, len(d.Gzip) > 0, jsonld)
		}
	})
}

// A coding made again for another revision is the one the body gets compressed, and decodes to
// it, whatever the revisions and the bytes after them.
func FuzzRecode(f *testing.F) {
	f.Add(int64(7), int64(8), `,"a":1}`, false)
	f.Add(int64(99), int64(100), `,"name":"Le Petit Zinc","x":"`+strings.Repeat("ab", 5000)+`"}`, true)
	f.Add(int64(1), int64(1), ``, false)
	f.Fuzz(func(t *testing.T, from, to int64, tail string, language bool) {
		head := headRevision
		if language {
			head = headWithLanguage
		}
		stamp := func(revision int64) []byte { return []byte(head + strconv.FormatInt(revision, 10) + tail) }
		old := dockey.Document{Body: stamp(from)}
		old.Gzip = gzipBytes(old.Body)
		body := stamp(to)
		got, ok := recode(body, &old)
		if from < 0 || to < 0 || len(tail) > 0 && tail[0] >= '0' && tail[0] <= '9' {
			// A sign or a digit after the head moves where the revision ends: recode may refuse,
			// and whatever it gives must still be right.
			if !ok {
				return
			}
		} else if !ok {
			t.Fatalf("recode refused %.60q from %.60q", body, old.Body)
		}
		if want := gzipBytes(body); !bytes.Equal(got, want) {
			t.Errorf("recode of %.60q differs from its compression", body)
		}
		if plain := fixture.Gunzip(t, got); !bytes.Equal(plain, body) {
			t.Errorf("recode decodes to %.60q, want %.60q", plain, body)
		}
	})
}

// codings returns the coding of every document of b by name.
func codings(b *dockey.Bundle) map[string][]byte {
	m := make(map[string][]byte)
	EachDocument(b, func(name string, d *dockey.Document) { m[name] = d.Gzip })
	return m
}

// stdGzip compresses body whole with the standard library.
func stdGzip(tb testing.TB, body []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkCodingsFrom stores a bundle whose documents a stored bundle holds, coded: compressing
// them, or reading the stored bundle for its codings, at its revision (a day ahead that starts)
// and at the next one (a day that starts with no document moved but for its revision).
func BenchmarkCodingsFrom(b *testing.B) {
	e := fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))
	stored := Render(e, 7)
	Compress(&stored)
	value, err := dockey.EncodeBundle(&stored)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compress", func(b *testing.B) {
		for b.Loop() {
			next := Render(e, 8)
			Compress(&next)
		}
	})
	for _, revision := range []int64{7, 8} {
		b.Run(fmt.Sprintf("codings/revision=%d", revision), func(b *testing.B) {
			for b.Loop() {
				next := Render(e, revision)
				var from dockey.Bundle
				if _, err := dockey.DecodeShared(value, &from, nil); err != nil {
					b.Fatal(err)
				}
				CodingsFrom(&next, &from)
				Compress(&next)
			}
		})
	}
}
