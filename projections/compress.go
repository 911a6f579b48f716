package projections

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/opencarte/publisher/projections/dockey"
)

// Compress fills the gzip coding of every document of b that lacks it. It runs only for a bundle
// about to be written, never per request and never per replayed record. The output is the same
// for the same body (no name, no modification time), so a rebuild stores the same bytes, and a
// body equal to another of the bundle (a menu without English text is the same in fr and en, say:
// about a quarter of the bytes of varied establishments) shares its coding instead of being
// compressed again.
func Compress(b *dockey.Bundle) {
	var done []*dockey.Document
	EachDocument(b, func(_ string, d *dockey.Document) {
		if len(d.Gzip) > 0 || len(d.Body) == 0 {
			return
		}
		for _, c := range done {
			if bytes.Equal(c.Body, d.Body) {
				d.Gzip = c.Gzip
				return
			}
		}
		d.Gzip = gzipBytes(d.Body)
		done = append(done, d)
	})
}

// CodingsFrom gives every document of b whose body is the body of from's document of the same
// name that document's gzip coding, so that Compress leaves it as it is: the bundle a day ahead
// becomes current is the one stored for it, but for the fields of a day ahead, and compressing
// every document again would be most of the work of storing it.
func CodingsFrom(b, from *dockey.Bundle) {
	coded := make(map[string]*dockey.Document)
	EachDocument(from, func(name string, d *dockey.Document) {
		if len(d.Gzip) > 0 {
			coded[name] = d
		}
	})
	EachDocument(b, func(name string, d *dockey.Document) {
		if c := coded[name]; c != nil && len(d.Gzip) == 0 && bytes.Equal(c.Body, d.Body) {
			d.Gzip = c.Gzip
		}
	})
}

// EachDocument calls fn with the resource name of every document of b, the variant's name after
// a dot for menu resources ("menus.fr", "menus/la-carte.en") and the JSON-LD ("jsonld.fr"), and
// the document; changes fn makes are kept.
func EachDocument(b *dockey.Bundle, fn func(name string, d *dockey.Document)) {
	variants := func(prefix string, v *dockey.Variants) {
		fn(prefix+".all", &v.All)
		fn(prefix+".fr", &v.FR)
		fn(prefix+".en", &v.EN)
	}
	fn(ResourceEstablishment, &b.Establishment)
	fn(ResourceHours, &b.Hours)
	variants(ResourceMenus, &b.Menus)
	for slug, v := range b.MenuDetails {
		variants(MenuResource(slug), &v)
		b.MenuDetails[slug] = v
	}
	fn(ResourceJSONLD+".fr", &b.JSONLD.FR)
	fn(ResourceJSONLD+".en", &b.JSONLD.EN)
}

// gzipWriters reuses compressors: each holds several hundred kilobytes of window and tables, far
// more than a document, so making one per document would cost more than compressing it. The
// level is klauspost/compress's fastest, chosen by measurement (BenchmarkCompressLevels in
// cmd/scalebench, on the documents of generated establishments): it takes a quarter less CPU than
// its default level, the least CPU per byte saved of all its levels, for codings about 8 %
// larger, which are a fifth of the documents' bytes.
var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		panic("projections: gzip level: " + err.Error()) // a constant level is always valid
	}
	return zw
}}

func gzipBytes(body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(body) // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}
