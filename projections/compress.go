package projections

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/opencarte/publisher/projections/dockey"
)

// compress fills the gzip coding of every document of b that lacks it. It runs only for a bundle
// about to be written, never per request and never per replayed record. The output is the same
// for the same body (no name, no modification time), so a rebuild stores the same bytes, and a
// body equal to another of the bundle (a menu without English text is the same in fr and en, say:
// about a quarter of the bytes of varied establishments) shares its coding instead of being
// compressed again.
func compress(b *dockey.Bundle) {
	var done []*dockey.Document
	eachDocument(b, func(d *dockey.Document) {
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

// eachDocument calls fn with every document of b; changes fn makes are kept.
func eachDocument(b *dockey.Bundle, fn func(*dockey.Document)) {
	variants := func(v *dockey.Variants) { fn(&v.All); fn(&v.FR); fn(&v.EN) }
	fn(&b.Establishment)
	fn(&b.Hours)
	variants(&b.Menus)
	for slug, v := range b.MenuDetails {
		variants(&v)
		b.MenuDetails[slug] = v
	}
}

// gzipWriters reuses compressors: each holds several hundred kilobytes of window and tables, far
// more than a document, so making one per document would cost more than compressing it. The
// level is klauspost/compress's default: on these documents it compresses at twice the speed of
// the standard library's best level, for codings about 1 % larger.
var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
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
