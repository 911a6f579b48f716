package dockey

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// binaryMagic starts a bundle stored in its binary form, the form EncodeBundle writes: no JSON
// value, the form of earlier versions, starts with a zero byte. The last byte is the form's
// version.
const binaryMagic = "\x00bundle\x01"

// IsBinary reports whether value is a bundle in the binary form, which Decode and DecodeShared
// read without looking at a byte of its documents.
func IsBinary(value []byte) bool { return bytes.HasPrefix(value, []byte(binaryMagic)) }

// The tag before each document of the binary form.
const (
	docAbsent = 0 // the zero Document
	docInline = 1 // body, entity tag and gzip coding follow
	// docSame and above: the same document as the one written (docSame - tag) documents before,
	// counting from 0 at the establishment document, whose bytes are not written again.
	docSame = 2
)

// EncodeBundle returns the stored form of b, its binary form, or an error when one of its strings
// (not its bodies) is not UTF-8: the magic, then every field of b
// in the order Bundle declares them, integers as varints, strings, bodies and codings as their
// length then their bytes, maps in the order of their keys, each document after a tag that says
// whether it is absent, written here, or the same as one written before it. The bodies appear
// byte for byte as rendered, and a reader frames each by its length instead of scanning it: the
// bodies are nine tenths of a bundle, and a read node decodes a hundred thousand bundles when it
// starts. A document equal to an earlier one of the bundle (a menu without English text is the
// same in "all" and "fr", about a quarter of the document bytes of varied establishments) is
// stored once, and a reader that keeps the value shares it between both.
func EncodeBundle(b *Bundle) ([]byte, error) {
	size := len(binaryMagic) + 128 + len(b.Slug) + len(b.Status) + len(b.KeyHash) + len(b.MasterMenuURL)
	for key, r := range b.Redirects {
		size += 3*binary.MaxVarintLen64 + len(key) + len(r.FR) + len(r.EN)
	}
	docs := 0
	b.EachDocument(func(d *Document) {
		docs++
		size += 3*binary.MaxVarintLen64 + len(d.Body) + len(d.ETag) + len(d.Gzip)
	})
	w := binaryWriter{buf: make([]byte, 0, size), written: make([]*Document, 0, docs)}
	w.buf = append(w.buf, binaryMagic...)
	w.str(b.Slug)
	w.buf = binary.AppendVarint(w.buf, b.Revision)
	w.buf = binary.AppendUvarint(w.buf, b.Sequence)
	w.buf = binary.AppendVarint(w.buf, b.Base)
	w.buf = binary.AppendVarint(w.buf, b.Starts)
	w.str(b.Status)
	var flags byte
	if b.APIEnabled {
		flags |= 1
	}
	if b.MenuRedirectEnabled {
		flags |= 2
	}
	w.buf = append(w.buf, flags)
	w.str(b.KeyHash)
	w.str(b.MasterMenuURL)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(b.Redirects)))
	for _, key := range slices.Sorted(maps.Keys(b.Redirects)) {
		w.str(key)
		w.str(b.Redirects[key].FR)
		w.str(b.Redirects[key].EN)
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(b.MenuDetails)))
	for _, key := range slices.Sorted(maps.Keys(b.MenuDetails)) {
		w.str(key)
	}
	b.EachDocument(w.document)
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

// EachDocument calls fn on every document of b in the order of the binary form: establishment,
// hours, menus, the menu details in the order of their types, then the JSON-LD. The documents of
// the menu details are copies of those of b's map: fn may read them and write their bytes, not
// replace them.
func (b *Bundle) EachDocument(fn func(*Document)) {
	variants := func(v *Variants) {
		fn(&v.All)
		fn(&v.FR)
		fn(&v.EN)
	}
	fn(&b.Establishment)
	fn(&b.Hours)
	variants(&b.Menus)
	if len(b.MenuDetails) > 0 {
		var few [8]string // the types of most bundles' menus, sorted without an allocation
		types := few[:0]
		for key := range b.MenuDetails {
			types = append(types, key)
		}
		slices.Sort(types)
		details := make([]Variants, len(types)) // one array for all, each document's address its own
		for i, key := range types {
			details[i] = b.MenuDetails[key]
			variants(&details[i])
		}
	}
	fn(&b.JSONLD.FR)
	fn(&b.JSONLD.EN)
}

// binaryWriter appends the binary form of a bundle to buf; written holds the documents written
// so far, in order, which a later equal document refers to. err is set at a string that is not
// UTF-8, which no reader would take.
type binaryWriter struct {
	buf     []byte
	written []*Document
	err     error
}

func (w *binaryWriter) str(s string) {
	if !utf8.ValidString(s) && w.err == nil {
		w.err = fmt.Errorf("dockey: the string %q of a bundle is not UTF-8", s)
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *binaryWriter) bytes(p []byte) {
	w.buf = binary.AppendUvarint(w.buf, uint64(len(p)))
	w.buf = append(w.buf, p...)
}

func (w *binaryWriter) document(d *Document) {
	defer func() { w.written = append(w.written, d) }()
	if len(d.Body) == 0 && d.ETag == "" && len(d.Gzip) == 0 {
		w.buf = append(w.buf, docAbsent)
		return
	}
	for i, earlier := range slices.Backward(w.written) {
		if earlier.ETag == d.ETag && bytes.Equal(earlier.Body, d.Body) && bytes.Equal(earlier.Gzip, d.Gzip) {
			w.buf = binary.AppendUvarint(w.buf, uint64(docSame+len(w.written)-1-i))
			return
		}
	}
	w.buf = append(w.buf, docInline)
	w.bytes(d.Body)
	w.str(d.ETag)
	w.bytes(d.Gzip)
}

// errBinary is the error of every binary value that cannot be decoded.
var errBinary = errors.New("dockey: malformed bundle")

// decodeBinary decodes value, a bundle in the binary form, into b, which shares value's bytes:
// b is only valid while value is unchanged. It checks the form, bounds included, and that every
// string is valid UTF-8; not the bodies, which the projector checked before it stored them.
func decodeBinary(value []byte, b *Bundle) error {
	*b = Bundle{}
	r := binaryReader{data: value, i: len(binaryMagic)}
	r.bundle(b)
	if r.err == nil && r.i != len(r.data) {
		r.fail("%d bytes after the bundle", len(r.data)-r.i)
	}
	if r.err != nil {
		*b = Bundle{}
		return r.err
	}
	return nil
}

// binaryReader reads a binary value; after the first failure, every read gives a zero value
// and err says what failed first.
type binaryReader struct {
	data []byte
	i    int
	err  error
	read []*Document // the documents read so far, in order
}

func (r *binaryReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", errBinary, r.i, fmt.Sprintf(format, args...))
	}
	r.i = len(r.data)
}

func (r *binaryReader) bundle(b *Bundle) {
	b.Slug = r.str("slug")
	b.Revision = r.varint("content_revision")
	b.Sequence = r.uvarint("log_sequence")
	b.Base = r.varint("ahead_of")
	b.Starts = r.varint("starts")
	b.Status = r.str("status")
	switch flags := r.flags(); {
	case flags > 3:
		r.fail("unknown flags %#x", flags)
	default:
		b.APIEnabled, b.MenuRedirectEnabled = flags&1 != 0, flags&2 != 0
	}
	b.KeyHash = r.str("key_hash")
	b.MasterMenuURL = r.str("master_menu_url")
	if n := r.count("redirects"); n > 0 {
		b.Redirects = make(map[string]Redirect, n)
		for range n {
			key := r.str("redirects key")
			rd := Redirect{FR: r.str("redirect fr"), EN: r.str("redirect en")}
			if _, dup := b.Redirects[key]; dup {
				r.fail("redirects key %q twice", key)
			}
			b.Redirects[key] = rd
		}
	}
	var detailTypes []string
	if n := r.count("menu_details"); n > 0 {
		detailTypes = make([]string, 0, n)
		for range n {
			key := r.str("menu_details key")
			if len(detailTypes) > 0 && key <= detailTypes[len(detailTypes)-1] {
				r.fail("menu_details keys out of order at %q", key)
			}
			detailTypes = append(detailTypes, key)
		}
	}
	r.read = make([]*Document, 0, 7+3*len(detailTypes))
	r.document(&b.Establishment)
	r.document(&b.Hours)
	r.variants(&b.Menus)
	if len(detailTypes) > 0 {
		details := make([]Variants, len(detailTypes))
		b.MenuDetails = make(map[string]Variants, len(detailTypes))
		for i, key := range detailTypes {
			r.variants(&details[i])
			b.MenuDetails[key] = details[i]
		}
	}
	r.document(&b.JSONLD.FR)
	r.document(&b.JSONLD.EN)
}

func (r *binaryReader) variants(v *Variants) {
	r.document(&v.All)
	r.document(&v.FR)
	r.document(&v.EN)
}

func (r *binaryReader) document(d *Document) {
	defer func() { r.read = append(r.read, d) }()
	switch tag := r.uvarint("document tag"); {
	case r.err != nil || tag == docAbsent:
	case tag == docInline:
		d.Body = r.bytes("body")
		d.ETag = r.str("etag")
		d.Gzip = r.bytes("gzip")
	case tag-docSame < uint64(len(r.read)):
		*d = *r.read[uint64(len(r.read))-1-(tag-docSame)]
	default:
		r.fail("document %d refers to one that does not come before it", len(r.read))
	}
}

func (r *binaryReader) flags() byte {
	if r.i >= len(r.data) {
		r.fail("flags: the value ends")
		return 0
	}
	r.i++
	return r.data[r.i-1]
}

func (r *binaryReader) uvarint(name string) uint64 { return readVarint(r, name, binary.Uvarint) }

func (r *binaryReader) varint(name string) int64 { return readVarint(r, name, binary.Varint) }

// readVarint reads a varint with read, binary.Uvarint or binary.Varint.
func readVarint[T int64 | uint64](r *binaryReader, name string, read func([]byte) (T, int)) T {
	v, n := read(r.data[r.i:])
	if n <= 0 {
		r.fail("%s: not a varint", name)
		return 0
	}
	r.i += n
	return v
}

// count reads the number of entries of a map, each of which takes a byte at least.
func (r *binaryReader) count(name string) int {
	n := r.uvarint(name)
	if n > uint64(len(r.data)-r.i) {
		r.fail("%s: %d entries in %d bytes", name, n, len(r.data)-r.i)
		return 0
	}
	return int(n)
}

// bytes reads a length and that many bytes, shared with the value; nil for none.
func (r *binaryReader) bytes(name string) []byte {
	n := r.uvarint(name)
	if n > uint64(len(r.data)-r.i) {
		r.fail("%s: %d bytes, %d left", name, n, len(r.data)-r.i)
		return nil
	}
	if n == 0 {
		return nil
	}
	p := r.data[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return p
}

// str reads a string in valid UTF-8, shared with the value.
func (r *binaryReader) str(name string) string {
	p := r.bytes(name)
	if !utf8.Valid(p) {
		r.fail("%s is not UTF-8", name)
		return ""
	}
	return unsafe.String(unsafe.SliceData(p), len(p))
}
