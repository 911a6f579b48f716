package projections

import (
	"bytes"
	"compress/gzip"

	"github.com/opencarte/publisher/projections/dockey"
)

// compress fills the gzip coding of every document of b that lacks it. It runs only for a bundle
// about to be written, never per request and never per replayed record. The output is the same
// for the same body (no name, no modification time), so a rebuild stores the same bytes.
func compress(b *dockey.Bundle) {
	eachDocument(b, func(d *dockey.Document) {
		if len(d.Gzip) == 0 && len(d.Body) > 0 {
			d.Gzip = gzipBytes(d.Body)
		}
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

func gzipBytes(body []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		panic("projections: gzip level: " + err.Error()) // a constant level is always valid
	}
	_, _ = zw.Write(body) // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	return buf.Bytes()
}
