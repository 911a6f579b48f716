package readapi

import (
	"strconv"
	"unsafe"

	"github.com/opencarte/publisher/projections/dockey"
)

// headerValues builds the header values of one entry (entity tags, lengths, locations, the
// revision) in two arrays allocated once, at the size the bundle needs: their bytes in text, the
// one-value slices net/http is handed in values. A string that lies in kept, the stored value the
// entry keeps, is used where it is. An entry that keeps its value is then built without an
// allocation per header, which a read node would otherwise make, and collect, tens of times for
// each bundle it loads.
type headerValues struct {
	values []string
	text   []byte
	kept   []byte
}

// newHeaderValues returns the header values of the entry of b, which keeps kept.
func newHeaderValues(b *dockey.Bundle, kept []byte) *headerValues {
	h := &headerValues{kept: kept}
	digits := func(n int) int { // of n ≥ 0 in decimal; a negative revision fails the entry
		d := 1
		for ; n >= 10; n /= 10 {
			d++
		}
		return d
	}
	docs, text := 0, digits(int(b.Revision))
	doc := func(d *dockey.Document) {
		docs++
		if !h.inKept(d.ETag) {
			text += len(d.ETag)
		}
		text += len(d.ETag) + len(`-gzip`) + digits(len(d.Body)) + digits(len(d.Gzip))
	}
	b.EachDocument(doc)
	locations := 1
	text += len(b.MasterMenuURL)
	for _, r := range b.Redirects {
		locations += 2
		text += len(r.FR) + len(r.EN)
	}
	h.values, h.text = make([]string, 0, 1+locations+4*docs), make([]byte, 0, text)
	return h
}

// value returns a header value of s alone; s must be a string str, number or gzipTag returned.
func (h *headerValues) value(s string) []string {
	h.values = append(h.values, s)
	n := len(h.values)
	return h.values[n-1 : n : n]
}

// str returns s in kept or in text.
func (h *headerValues) str(s string) string {
	if s == "" || h.inKept(s) {
		return s
	}
	start := len(h.text)
	h.text = append(h.text, s...)
	return h.since(start)
}

// number returns n in decimal, in text.
func (h *headerValues) number(n int) string {
	start := len(h.text)
	h.text = strconv.AppendInt(h.text, int64(n), 10)
	return h.since(start)
}

// gzipTag returns the entity tag of the gzip coding of a document tagged etag (dockey.GzipETag),
// in text.
func (h *headerValues) gzipTag(etag string) string {
	start := len(h.text)
	h.text = dockey.AppendGzipETag(h.text, etag)
	return h.since(start)
}

// since returns what text holds from start on. Were text grown past its capacity, the strings
// returned before keep the array they were written in, which nothing writes again.
func (h *headerValues) since(start int) string {
	return unsafe.String(&h.text[start], len(h.text)-start)
}

func (h *headerValues) inKept(s string) bool {
	return inside(unsafe.Slice(unsafe.StringData(s), len(s)), h.kept)
}

// inside reports whether the bytes of p lie in region.
func inside(p, region []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return len(region) > 0 && at >= start && at+uintptr(len(p)) <= start+uintptr(len(region))
}

// size returns the bytes the allocator holds for both arrays.
func (h *headerValues) size() int {
	return allocated(cap(h.text)) + allocated(cap(h.values)*int(unsafe.Sizeof("")))
}
