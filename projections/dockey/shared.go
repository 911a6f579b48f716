package dockey

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// DecodeShared decodes value, a stored bundle, into b as Decode does, copying nothing it need
// not. A value in the binary form is decoded whole into b, which shares value's bytes: b is only
// valid while value is unchanged, and a reader that keeps value keeps b.
//
// A value in the JSON form of earlier versions, which the bucket holds until the establishment
// changes, is decoded so too but for its gzip codings and its strings with escapes (every entity
// tag has its quotes escaped), which are written into scratch, whose grown form it returns for
// the next call; b is then valid until that scratch is passed in again too. It walks the form
// those versions wrote, checking the JSON grammar as it goes: the members of Bundle under their
// own names, once each, strings without \u escapes or control characters, integers without plus
// sign, fraction, exponent or leading zero, and null only as a body, in any order and spacing. A
// body is taken as the bytes that frame it, unparsed, when its entity tag is its own (Tagged):
// the projector checked that every body it stored is JSON and tagged it so. Anything else, a body
// whose tag is another's or an invalid value, is decoded by Decode, whose answer stands.
// FuzzDecodeShared checks that what the walk accepts, it decodes as encoding/json does, but for a
// body that is not JSON and carries its own tag, which the projector does not store.
func DecodeShared(value []byte, b *Bundle, scratch []byte) ([]byte, error) {
	if IsBinary(value) {
		return scratch, decodeBinary(value, b)
	}
	*b = Bundle{}
	w := walker{data: value, scratch: scratch[:0]}
	if w.bundle(b) && w.end() {
		return w.scratch, nil
	}
	scratch = w.scratch
	*b = Bundle{}
	return scratch, Decode(value, b)
}

// walker reads a value; each method reports false at anything outside the form DecodeShared
// walks, invalid JSON included, bodies but for their framing aside.
type walker struct {
	data    []byte
	i       int
	scratch []byte
}

func (w *walker) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// next skips spaces and reports whether c comes next, consuming it if so.
func (w *walker) next(c byte) bool {
	w.space()
	if w.i < len(w.data) && w.data[w.i] == c {
		w.i++
		return true
	}
	return false
}

// end reports whether nothing but spaces is left.
func (w *walker) end() bool {
	w.space()
	return w.i == len(w.data)
}

// str reads a string in valid UTF-8. A string without escapes shares the value's bytes; one
// with the escapes of single characters (\" \\ \/ \b \f \n \r \t, as entity tags have) is
// written into scratch. Escapes of code points (\u) are left to Decode, which maps lone
// surrogates as encoding/json does.
func (w *walker) str() (string, bool) {
	w.space()
	if w.i >= len(w.data) || w.data[w.i] != '"' {
		return "", false
	}
	start := w.i + 1
	w.skipString()
	if w.i > len(w.data) { // no closing quote
		return "", false
	}
	s := w.data[start : w.i-1]
	for _, c := range s {
		if c < 0x20 { // a control character, which JSON has escaped in strings
			return "", false
		}
	}
	if bytes.IndexByte(s, '\\') >= 0 {
		out := w.take(len(s))[:0]
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case '"', '\\', '/':
					c = s[i]
				case 'b':
					c = '\b'
				case 'f':
					c = '\f'
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				default:
					return "", false
				}
			}
			out = append(out, c)
		}
		w.scratch = w.scratch[:len(w.scratch)-len(s)+len(out)] // give back what the escapes saved
		s = out
	}
	if !utf8.Valid(s) {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(s), len(s)), true
}

// take returns the next n bytes of scratch; when it has no room, the scratch is a new buffer,
// what was taken before keeping the old one.
func (w *walker) take(n int) []byte {
	if cap(w.scratch)-len(w.scratch) < n {
		w.scratch = make([]byte, 0, max(2*cap(w.scratch), n, 4096))
	}
	start := len(w.scratch)
	w.scratch = w.scratch[:start+n]
	return w.scratch[start : start+n : start+n]
}

// object reads the members of an object, calling member with each name. A name met twice is
// refused, since encoding/json would merge or overwrite what the first gave, and so is an object
// of more than maxMembers members, which no bundle has, to keep the check short.
func (w *walker) object(member func(name string) bool) bool {
	if !w.next('{') {
		return false
	}
	if w.next('}') {
		return true
	}
	var names [maxMembers]string
	for n := 0; ; n++ {
		name, ok := w.str()
		if !ok || n == maxMembers || !w.next(':') {
			return false
		}
		for _, s := range names[:n] {
			if s == name {
				return false
			}
		}
		names[n] = name
		if !member(name) {
			return false
		}
		if w.next(',') {
			continue
		}
		return w.next('}')
	}
}

// maxMembers is the most members an object may have for the walk: a bundle has 14 at most, a
// menu type map one per active menu type.
const maxMembers = 64

// literal reads a number, true, false or null: the bytes up to the next delimiter.
func (w *walker) literal() []byte {
	w.space()
	start := w.i
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return w.data[start:w.i]
		}
		w.i++
	}
	return w.data[start:]
}

func (w *walker) boolean(dst *bool) bool {
	switch string(w.literal()) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return false
	}
	return true
}

func (w *walker) int64(dst *int64) bool {
	lit := w.literal()
	n, err := strconv.ParseInt(string(lit), 10, 64)
	*dst = n
	return err == nil && jsonInteger(lit)
}

func (w *walker) uint64(dst *uint64) bool {
	lit := w.literal()
	n, err := strconv.ParseUint(string(lit), 10, 64)
	*dst = n
	return err == nil && jsonInteger(lit)
}

// jsonInteger reports whether lit is an integer as JSON writes one: an optional minus, then 0 or
// digits not starting with 0. strconv also takes a plus sign and leading zeros.
func jsonInteger(lit []byte) bool {
	digits, _ := bytes.CutPrefix(lit, []byte{'-'})
	if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (w *walker) text(dst *string) bool {
	s, ok := w.str()
	*dst = s
	return ok
}

// raw reads any value as its bytes, as json.RawMessage holds it.
func (w *walker) raw() []byte {
	w.space()
	start := w.i
	if w.i >= len(w.data) {
		return nil
	}
	switch w.data[w.i] {
	case '{', '[':
		depth := 0
		for w.i < len(w.data) {
			for w.i < len(w.data) && !structural[w.data[w.i]] {
				w.i++
			}
			if w.i == len(w.data) {
				break
			}
			switch w.data[w.i] {
			case '"':
				w.skipString()
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			w.i++
			if depth == 0 {
				break
			}
		}
	case '"':
		w.skipString()
	default:
		w.literal()
	}
	if w.i > len(w.data) { // an unterminated string, which a valid value does not hold
		w.i = len(w.data)
		return nil
	}
	return w.data[start:w.i]
}

// bodyEnd is what follows an object body as earlier versions wrote a document: the body's last
// byte, then its entity tag.
var bodyEnd = []byte(`},"etag":"`)

// body reads a document's body. An object body followed by its own entity tag, as earlier versions
// wrote it, is cut at the first bodyEnd and its tag checked there: the search runs at the speed
// of memory, where framing the body byte by byte was a sixth of a read node's start. It reports
// the 16 hex digits of the tag it checked, nil when it framed the body instead. A body that is
// JSON holds bodyEnd only as a member "etag" of an object nested in it, which no rendering has,
// and a cut there would not carry the tag of the bytes before it.
func (w *walker) body() (body, tag []byte) {
	w.space()
	if w.i < len(w.data) && w.data[w.i] == '{' {
		if n := bytes.Index(w.data[w.i:], bodyEnd); n >= 0 {
			body := w.data[w.i : w.i+n+1]
			// The tag is a JSON string: its quotes escaped, around 16 hex digits.
			rest := w.data[w.i+n+len(bodyEnd):]
			if len(rest) >= 20 && rest[0] == '\\' && rest[1] == '"' && rest[18] == '\\' && rest[19] == '"' {
				if h, ok := parseHex(rest[2:18]); ok && h == xxhash.Sum64(body) {
					w.i += n + 1
					return body, rest[2:18]
				}
			}
		}
	}
	return w.raw(), nil
}

// structural marks the bytes that open or close a string, an object or an array.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipString moves past the string whose opening quote is the current byte, escapes included.
func (w *walker) skipString() {
	w.i++
	start := w.i
	for {
		j := bytes.IndexByte(w.data[w.i:], '"')
		if j < 0 {
			w.i = len(w.data) + 1 // no end: past it
			return
		}
		w.i += j + 1
		// The quote ends the string unless an odd number of backslashes precede it.
		k := w.i - 2
		for k >= start && w.data[k] == '\\' {
			k--
		}
		if (w.i-2-k)%2 == 0 {
			return
		}
	}
}

// bytes reads a base64 string into scratch, as encoding/json decodes a []byte.
func (w *walker) bytes(dst *[]byte) bool {
	s, ok := w.str()
	if !ok {
		return false
	}
	if s == "" {
		*dst = []byte{}
		return true
	}
	out := w.take(base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, unsafe.Slice(unsafe.StringData(s), len(s)))
	if err != nil {
		return false
	}
	w.scratch = w.scratch[:len(w.scratch)-len(out)+n]
	*dst = out[:n:n]
	return true
}

// document reads a document whose body, when it has one, carries its own tag.
func (w *walker) document(d *Document) bool {
	var checked []byte // the tag's digits body checked the body against
	return w.object(func(name string) bool {
		switch name {
		case "body":
			d.Body, checked = w.body()
			return len(d.Body) > 0
		case "etag":
			return w.text(&d.ETag)
		case "gzip":
			return w.bytes(&d.Gzip)
		}
		return false
	}) && (d.Body == nil || string(d.Body) == "null" || sameTag(d.ETag, checked) || Tagged(d.Body, d.ETag))
}

// sameTag reports whether etag is the tag of the 16 hex digits, nil for none.
func sameTag(etag string, digits []byte) bool {
	return digits != nil && len(etag) == 18 && etag[0] == '"' && etag[17] == '"' && etag[1:17] == string(digits)
}

func (w *walker) variants(v *Variants) bool {
	return w.object(func(name string) bool {
		switch name {
		case "all":
			return w.document(&v.All)
		case "fr":
			return w.document(&v.FR)
		case "en":
			return w.document(&v.EN)
		}
		return false
	})
}

func (w *walker) localized(l *Localized) bool {
	return w.object(func(name string) bool {
		switch name {
		case "fr":
			return w.document(&l.FR)
		case "en":
			return w.document(&l.EN)
		}
		return false
	})
}

func (w *walker) redirect(r *Redirect) bool {
	return w.object(func(name string) bool {
		switch name {
		case "fr":
			return w.text(&r.FR)
		case "en":
			return w.text(&r.EN)
		}
		return false
	})
}

func (w *walker) bundle(b *Bundle) bool {
	return w.object(func(name string) bool {
		switch name {
		case "slug":
			return w.text(&b.Slug)
		case "content_revision":
			return w.int64(&b.Revision)
		case "log_sequence":
			return w.uint64(&b.Sequence)
		case "ahead_of":
			return w.int64(&b.Base)
		case "starts":
			return w.int64(&b.Starts)
		case "status":
			return w.text(&b.Status)
		case "public_api_enabled":
			return w.boolean(&b.APIEnabled)
		case "key_hash":
			return w.text(&b.KeyHash)
		case "menu_redirect_enabled":
			return w.boolean(&b.MenuRedirectEnabled)
		case "master_menu_url":
			return w.text(&b.MasterMenuURL)
		case "redirects":
			b.Redirects = map[string]Redirect{}
			return w.object(func(menuType string) bool {
				var r Redirect
				ok := w.redirect(&r)
				b.Redirects[menuType] = r
				return ok
			})
		case "establishment":
			return w.document(&b.Establishment)
		case "hours":
			return w.document(&b.Hours)
		case "menus":
			return w.variants(&b.Menus)
		case "menu_details":
			b.MenuDetails = map[string]Variants{}
			return w.object(func(menuType string) bool {
				var v Variants
				ok := w.variants(&v)
				b.MenuDetails[menuType] = v
				return ok
			})
		case "jsonld":
			return w.localized(&b.JSONLD)
		}
		return false
	})
}
