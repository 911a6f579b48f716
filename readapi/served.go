package readapi

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/opencarte/publisher/projections/dockey"
)

// served is the immutable, decoded form of one dockey.Bundle: everything a request needs, with
// every header value pre-built so that answering copies slice headers and nothing else. It
// is never modified after newEntry returns; the mirror replaces it whole.
type served struct {
	slug           string
	revision       int64
	revisionHeader []string // Content-Revision value
	// base and starts are those of the bundle of a day ahead (dockey.Bundle.Base and Starts):
	// it replaces the current entry of revision base from the instant starts, in Unix seconds.
	base, starts int64

	active       bool // status active; any other status, draft included, is not served
	apiEnabled   bool
	keyHash      [sha256.Size]byte
	menuRedirect bool

	masterMenu []string            // Location of /r/master_menu; nil when there is no unified file
	redirects  map[string]redirect // by menu type slug

	establishment document
	hours         document
	menus         variants
	menuDetails   map[string]*variants // by menu type slug
	jsonld        localized            // schema.org JSON-LD, application/ld+json

	size int // bytes of the value kept and the header arrays, or of the arrays compact made
}

// redirect holds the Location values of /r/menus for one menu type; nil means no file covers
// that locale.
type redirect struct {
	fr, en []string
}

// document is one stored response body with its pre-built headers. The zero document is absent.
type document struct {
	contentType []string // jsonContentType but for the JSON-LD
	body        []byte
	etag        string
	etagHeader  []string
	length      []string

	// gzip is the stored gzip coding of body, kept only when it is smaller; nil otherwise.
	gzip           []byte
	gzipETag       string
	gzipETagHeader []string
	gzipLength     []string
}

// variants holds the three renderings of a menu resource.
type variants struct {
	all, fr, en document
}

// localized holds the renderings of a resource in French and in English.
type localized struct {
	fr, en document
}

// pick returns the rendering of locale l: French unless l is English.
func (v *localized) pick(l locale) *document {
	if l == localeEN {
		return &v.en
	}
	return &v.fr
}

// locale is the rendering a request selects with its locale query parameter.
type locale uint8

const (
	localeAll locale = iota // no locale parameter: French text, every asset
	localeFR
	localeEN
)

// pick returns the variant of locale l.
func (v *variants) pick(l locale) *document {
	switch l {
	case localeFR:
		return &v.fr
	case localeEN:
		return &v.en
	default:
		return &v.all
	}
}

// apiOpen reports whether the API endpoints serve this establishment to a holder of its key.
func (e *served) apiOpen() bool { return e.active && e.apiEnabled }

// keyMatches reports, in constant time for keys of a given length, whether key is the current
// API key of the establishment. Only the key's SHA-256 is stored, so the hashes are compared.
func (e *served) keyMatches(key string) bool {
	sum := hashKey(key)
	return subtle.ConstantTimeCompare(sum[:], e.keyHash[:]) == 1
}

// errInvalidBundle marks a bundle the mirror refuses to serve.
var errInvalidBundle = errors.New("readapi: invalid bundle")

// decoder decodes bundles one after the other, reusing its buffer: the bundle is decoded without
// copies (dockey.DecodeShared), its bodies and plain strings sharing value. An entry keeps a
// value in the binary form as it is; of one in the JSON form of earlier versions, whose codings
// and entity tags are decoded into the buffer, newServed moves every byte the entry keeps into
// arrays of its own. A mirror loading a bucket then leaves next to nothing as garbage.
type decoder struct {
	scratch []byte
}

// maxScratch bounds the buffer a decoder keeps between bundles.
const maxScratch = 1 << 20

// decode decodes the bundle stored under the key of slug.
func (d *decoder) decode(slug string, value []byte) (*served, error) {
	var b dockey.Bundle
	var err error
	d.scratch, err = dockey.DecodeShared(value, &b, d.scratch)
	if cap(d.scratch) > maxScratch {
		d.scratch = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decode: %w", errInvalidBundle, err)
	}
	if b.Slug != slug {
		return nil, fmt.Errorf("%w: slug %q stored under the key of %q", errInvalidBundle, b.Slug, slug)
	}
	var kept []byte
	if dockey.IsBinary(value) {
		kept = value
	}
	return newServed(&b, kept)
}

// newServed validates b and builds its entry. kept is the stored value in the binary form b was
// decoded from, which the entry keeps as it is, its header values built beside it; nil for a
// value in the JSON form, every byte of whose entry is moved into arrays of its own (compact).
// Everything that could make a response wrong is checked here, once, so that a
// request never meets a malformed value: a bundle that fails is skipped whole and the previous one
// stays in service. That a body is JSON, the projector checks before it stores it; a body of the
// JSON form of earlier versions was taken as it is only when its entity tag is its own.
func newServed(b *dockey.Bundle, kept []byte) (*served, error) {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}

	h := newHeaderValues(b, kept)
	e := &served{
		slug:           b.Slug,
		revision:       b.Revision,
		revisionHeader: h.value(h.number(int(b.Revision))),
		base:           b.Base,
		starts:         b.Starts,
		active:         b.Status == dockey.StatusActive,
		apiEnabled:     b.APIEnabled,
		menuRedirect:   b.MenuRedirectEnabled,
	}
	if !validSlug(b.Slug) {
		fail("slug %q is not valid", b.Slug)
	}
	if b.Revision < 0 {
		fail("content_revision %d is negative", b.Revision)
	}

	switch {
	case b.KeyHash != "":
		if len(b.KeyHash) != hex.EncodedLen(sha256.Size) {
			fail("key_hash is not a hex SHA-256")
		} else if _, err := hex.Decode(e.keyHash[:], []byte(b.KeyHash)); err != nil {
			fail("key_hash is not a hex SHA-256")
		}
	case b.APIEnabled:
		fail("public_api_enabled without key_hash")
	}

	if b.MasterMenuURL != "" {
		if !validLocation(b.MasterMenuURL) {
			fail("master_menu_url is not a valid location")
		}
		e.masterMenu = h.value(h.str(b.MasterMenuURL))
	}
	if len(b.Redirects) > 0 {
		e.redirects = make(map[string]redirect, len(b.Redirects))
	}
	for menuType, r := range b.Redirects {
		if !validSlug(menuType) {
			fail("redirects: menu type %q is not a valid slug", menuType)
			continue
		}
		var rd redirect
		for _, t := range []struct {
			url  string
			dst  *[]string
			name string
		}{{r.FR, &rd.fr, "fr"}, {r.EN, &rd.en, "en"}} {
			if t.url == "" {
				continue
			}
			if !validLocation(t.url) {
				fail("redirects.%s.%s is not a valid location", menuType, t.name)
			}
			*t.dst = h.value(h.str(t.url))
		}
		e.redirects[menuType] = rd
	}

	e.setDocuments(b, h, fail)

	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s: %w", errInvalidBundle, b.Slug, errors.Join(errs...))
	}
	if kept != nil {
		e.size = allocated(len(kept)) + h.size()
	} else {
		e.compact()
	}
	return e, nil
}

// setDocuments checks the documents of b and sets them in e, calling fail for each that is
// malformed. Documents must be complete whenever the API may serve them; otherwise they are kept
// only if well formed. The JSON-LD is never required: a bundle stored before it was rendered has
// none, and the resource answers 404 until the projector stores the bundle again, which it does
// when it starts.
func (e *served) setDocuments(b *dockey.Bundle, h *headerValues, fail func(format string, args ...any)) {
	open := e.apiOpen()
	// A document's name is put together only when it fails.
	doc := func(group, name, variant string, d dockey.Document, required bool) document {
		out, err := newDocument(d, required, h)
		if err != nil {
			fail("%s%s%s: %w", group, name, variant, err)
		}
		return out
	}
	vars := func(group, name string, v dockey.Variants) variants {
		return variants{
			all: doc(group, name, ".all", v.All, open),
			fr:  doc(group, name, ".fr", v.FR, open),
			en:  doc(group, name, ".en", v.EN, open),
		}
	}
	e.establishment = doc("", "establishment", "", b.Establishment, open)
	e.hours = doc("", "hours", "", b.Hours, open)
	e.menus = vars("", "menus", b.Menus)
	if len(b.MenuDetails) > 0 {
		e.menuDetails = make(map[string]*variants, len(b.MenuDetails))
	}
	for menuType, v := range b.MenuDetails {
		if !validSlug(menuType) {
			fail("menu_details: menu type %q is not a valid slug", menuType)
			continue
		}
		vv := vars("menu_details.", menuType, v)
		e.menuDetails[menuType] = &vv
	}
	e.jsonld = localized{fr: doc("", "jsonld", ".fr", b.JSONLD.FR, false), en: doc("", "jsonld", ".en", b.JSONLD.EN, false)}
	for _, d := range []*document{&e.jsonld.fr, &e.jsonld.en} {
		if d.body != nil {
			d.contentType = jsonldContentType
		}
	}
}

// newDocument checks a stored document and pre-builds its headers in h. A document is absent when
// its body is empty or JSON null; required says whether absence is an error.
func newDocument(d dockey.Document, required bool, h *headerValues) (document, error) {
	body := bytes.TrimSpace(d.Body)
	if len(body) == 0 || bytes.Equal(body, []byte("null")) {
		if required {
			return document{}, errors.New("document missing")
		}
		return document{}, nil
	}
	if body[0] != '{' {
		return document{}, errors.New("body is not a JSON object")
	}
	if !validETag(d.ETag) {
		return document{}, fmt.Errorf("etag %q is not a strong entity tag", d.ETag)
	}
	etag := h.str(d.ETag)
	doc := document{
		contentType: jsonContentType,
		body:        d.Body,
		etag:        etag,
		etagHeader:  h.value(etag),
		length:      h.value(h.number(len(d.Body))),
	}
	// A coding that is not gzip, or not smaller, is not worth serving; the body still is.
	if len(d.Gzip) > 2 && d.Gzip[0] == 0x1f && d.Gzip[1] == 0x8b && len(d.Gzip) < len(d.Body) {
		doc.gzip = d.Gzip
		doc.gzipETag = h.gzipTag(etag)
		doc.gzipETagHeader = h.value(doc.gzipETag)
		doc.gzipLength = h.value(h.number(len(d.Gzip)))
	}
	return doc, nil
}

// validETag reports whether s is a strong entity tag (RFC 9110, section 8.8.3): a quoted string
// of etagc characters.
func validETag(s string) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !etagChar(s[i]) {
			return false
		}
	}
	return true
}

func etagChar(c byte) bool { return c == 0x21 || c >= 0x23 && c <= 0x7e || c >= 0x80 }

// validLocation reports whether s can be sent as a Location header value as it is: non-empty,
// printable ASCII without spaces (a URL is percent-encoded already).
func validLocation(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
