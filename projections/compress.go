package projections

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/flate"

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

// CodingsFrom gives every document of b the gzip coding of from's document of the same name when
// their bodies are the same, or made from it when they differ in their revision only (recode), so
// that Compress leaves it as it is. The bundle a day ahead becomes current is the one stored for
// it, but for the fields of a day ahead; a day that starts, or most changes, moves the revision of
// every document of a bundle and the bytes of a few: compressing every document again would be
// most of the work of storing it.
func CodingsFrom(b, from *dockey.Bundle) {
	coded := make(map[string]*dockey.Document)
	EachDocument(from, func(name string, d *dockey.Document) {
		if len(d.Gzip) > 0 {
			coded[name] = d
		}
	})
	EachDocument(b, func(name string, d *dockey.Document) {
		c := coded[name]
		if c == nil || len(d.Gzip) > 0 {
			return
		}
		if bytes.Equal(c.Body, d.Body) {
			d.Gzip = c.Gzip
		} else if coding, ok := recode(d.Body, c); ok {
			d.Gzip = coding
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

// The gzip coding of a document is one gzip member whose deflate stream holds the body in two
// parts: its beginning up to the end of its revision number (revisionEnd), stored as it is in a
// block of its own, then the rest, compressed on its own. Stamping another revision into a
// document changes that beginning only, so the coding of the document at another revision is the
// one it had with its first block and its trailer written again (recode): a day that starts, or a
// change to one menu, compresses only the documents whose bytes after the revision changed. The
// header names no file and no modification time, so that the same body always gets the same
// coding and a rebuild stores the same bytes.
const (
	gzipHeader  = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff" // deflate, no flags, no time, fastest, unknown OS
	storedBlock = 5                                          // a stored block's header: its type, then its length twice
	gzipTrailer = 8                                          // the body's CRC-32 and length
)

// flateWriters reuses compressors: each holds several hundred kilobytes of window and tables, far
// more than a document, so making one per document would cost more than compressing it. The
// level is klauspost/compress's fastest, chosen by measurement (BenchmarkCompressLevels in
// cmd/scalebench, on the documents of generated establishments): it takes a quarter less CPU than
// its default level, the least CPU per byte saved of all its levels, for codings about 8 %
// larger, which are a fifth of the documents' bytes.
var flateWriters = sync.Pool{New: func() any {
	zw, err := flate.NewWriter(nil, flate.BestSpeed)
	if err != nil {
		panic("projections: flate level: " + err.Error()) // a constant level is always valid
	}
	return zw
}}

// gzipBytes returns the gzip coding of body.
func gzipBytes(body []byte) []byte {
	head := revisionEnd(body)
	buf := bytes.NewBuffer(appendHead(make([]byte, 0, len(body)/2+64), body[:head]))
	zw := flateWriters.Get().(*flate.Writer)
	zw.Reset(buf)
	_, _ = zw.Write(body[head:]) // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	flateWriters.Put(zw)
	return appendTrailer(buf.Bytes(), body)
}

// appendHead appends the gzip header and, unless head is empty, head in a stored block that is
// not the last one.
func appendHead(dst, head []byte) []byte {
	dst = append(dst, gzipHeader...)
	if len(head) == 0 {
		return dst
	}
	n := uint16(len(head)) // a revision's beginning is a few dozen bytes at most
	dst = append(dst, 0, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
	return append(dst, head...)
}

func appendTrailer(dst, body []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(body))
	return binary.LittleEndian.AppendUint32(dst, uint32(len(body)))
}

// revisionEnd returns the length of body's beginning up to the end of its revision number, or 0
// when it starts with none (a JSON-LD document, say).
func revisionEnd(body []byte) int {
	var n int
	switch {
	case bytes.HasPrefix(body, []byte(headRevision)):
		n = len(headRevision)
	case bytes.HasPrefix(body, []byte(headWithLanguage)):
		n = len(headWithLanguage)
	default:
		return 0
	}
	digits := n
	for n < len(body) && body[n] >= '0' && body[n] <= '9' {
		n++
	}
	if n == digits {
		return 0
	}
	return n
}

// recode returns the coding of body made from from, a document whose body differs from it in its
// beginning only (revisionEnd), and false when they differ elsewhere or from's coding is not of
// the form gzipBytes writes. The compressed rest of from's coding is taken as it is, which is
// sound because it was compressed on its own: it refers to none of the bytes before it.
func recode(body []byte, from *dockey.Document) ([]byte, bool) {
	head, fromHead := revisionEnd(body), revisionEnd(from.Body)
	if head == 0 || fromHead == 0 || !bytes.Equal(body[head:], from.Body[fromHead:]) {
		return nil, false
	}
	compressed, ok := compressedRest(from.Gzip, from.Body[:fromHead])
	if !ok {
		return nil, false
	}
	out := appendHead(make([]byte, 0, len(gzipHeader)+storedBlock+head+len(compressed)+gzipTrailer), body[:head])
	out = append(out, compressed...)
	return appendTrailer(out, body), true
}

// compressedRest returns the compressed rest of coding, the coding gzipBytes wrote of a body that
// begins with head, and false when coding is not of that form: one written by an earlier version,
// compressed whole, whose header, another compressor's, is not this one either.
func compressedRest(coding, head []byte) ([]byte, bool) {
	rest := len(gzipHeader) + storedBlock + len(head)
	if len(coding) < rest+gzipTrailer || string(coding[:len(gzipHeader)]) != gzipHeader {
		return nil, false
	}
	n, block := uint16(len(head)), coding[len(gzipHeader):]
	if block[0] != 0 || block[1] != byte(n) || block[2] != byte(n>>8) || block[3] != ^byte(n) || block[4] != ^byte(n>>8) ||
		!bytes.Equal(block[storedBlock:storedBlock+len(head)], head) {
		return nil, false
	}
	return coding[rest : len(coding)-gzipTrailer], true
}
