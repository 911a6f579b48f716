package dockey

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Bucket is the name of the KV bucket of the live bundles, in its first generation (see
// GenerationOf).
const Bucket = "DOCS"

// keyPrefix starts every bundle key; the rest of the key is the establishment slug.
const keyPrefix = "est."

// aheadPrefix starts the key of the bundle of an establishment's day ahead: its documents for
// its next local date, rendered before that day starts (see Bundle.Starts).
const aheadPrefix = "ahead."

// GenerationOf returns the generation whose bucket of bundles is named bucket: 1 for Bucket, n for
// Bucket_<n> (a rebuild's), 0 for any other name.
func GenerationOf(bucket string) int {
	if bucket == Bucket {
		return 1
	}
	suffix, ok := strings.CutPrefix(bucket, Bucket+"_")
	n, err := strconv.Atoi(suffix)
	if !ok || err != nil || n <= 1 {
		return 0
	}
	return n
}

// Key returns the KV key of the bundle of the establishment slug.
func Key(slug string) string { return keyPrefix + slug }

// SlugOf returns the slug a bundle key names and whether key is a bundle key.
func SlugOf(key string) (string, bool) {
	slug, ok := strings.CutPrefix(key, keyPrefix)
	return slug, ok && slug != ""
}

// Watch is the KV watch pattern that matches every bundle key.
const Watch = keyPrefix + ">"

// AheadKey returns the KV key of the bundle of the day ahead of the establishment slug.
func AheadKey(slug string) string { return aheadPrefix + slug }

// AheadSlugOf returns the slug the key of a bundle of a day ahead names, and whether key is one.
func AheadSlugOf(key string) (string, bool) {
	slug, ok := strings.CutPrefix(key, aheadPrefix)
	return slug, ok && slug != ""
}

// Status values of Bundle.Status.
const (
	StatusDraft  = "draft"
	StatusActive = "active"
)

// Bundle is the whole public state of one establishment as the read API needs it.
//
// A bundle is written only when at least one of its documents or access fields changed. Every
// Body but the JSON-LD's, which holds none, carries the same content_revision as Revision.
type Bundle struct {
	Slug     string `json:"slug"`
	Revision int64  `json:"content_revision"`
	// Sequence is the sequence in the event log of the record that last wrote the bundle. The
	// projector reads it to resume exactly where it stopped; readers ignore it.
	Sequence uint64 `json:"log_sequence,omitempty"`
	// Base and Starts are set on the bundle of a day ahead only: it is served in place of the
	// current bundle from the instant Starts (Unix seconds), the establishment's next local
	// midnight, as long as the current bundle is the one of revision Base it was rendered
	// beside. Its Revision is above Base.
	Base   int64 `json:"ahead_of,omitempty"`
	Starts int64 `json:"starts,omitempty"`

	// Access decides the status of a request before any document is looked at.
	Status              string `json:"status"`
	APIEnabled          bool   `json:"public_api_enabled"`
	KeyHash             string `json:"key_hash,omitempty"` // hex SHA-256 of the current API key
	MenuRedirectEnabled bool   `json:"menu_redirect_enabled"`

	// MasterMenuURL is the target of /r/master_menu; empty when there is no unified file.
	MasterMenuURL string `json:"master_menu_url,omitempty"`
	// Redirects holds the target of /r/menus per active menu type slug.
	Redirects map[string]Redirect `json:"redirects,omitempty"`

	Establishment Document            `json:"establishment"`
	Hours         Document            `json:"hours"`
	Menus         Variants            `json:"menus"`
	MenuDetails   map[string]Variants `json:"menu_details,omitempty"`
	// JSONLD is the schema.org JSON-LD document in each language. Its bodies hold no
	// content_revision; they are absent from a bundle stored before they were rendered.
	JSONLD Localized `json:"jsonld"`
}

// Redirect is the first page URL of a current menu per requested locale; empty means no file
// covers that locale (a 404).
type Redirect struct {
	FR string `json:"fr,omitempty"`
	EN string `json:"en,omitempty"`
}

// Variants holds the three renderings of a menu resource: no locale (French text, every asset),
// fr and en (assets filtered by locale).
type Variants struct {
	All Document `json:"all"`
	FR  Document `json:"fr"`
	EN  Document `json:"en"`
}

// Localized holds the renderings of a resource in French and in English.
type Localized struct {
	FR Document `json:"fr"`
	EN Document `json:"en"`
}

// Document is one rendered response body, ready to be written as it is.
type Document struct {
	Body json.RawMessage `json:"body"`
	// ETag is the strong entity tag of Body, quotes included, computed when the body was rendered.
	ETag string `json:"etag"`
	// Gzip is Body compressed with gzip, computed once when the bundle is written; empty when the
	// writer did not compress. Its strong entity tag is GzipETag(ETag).
	Gzip []byte `json:"gzip,omitempty"`
}

// Tagged reports whether etag is the entity tag of body as the projector computes it: the 64-bit
// xxhash of body as 16 lower-case hex digits, in double quotes.
func Tagged(body []byte, etag string) bool {
	if len(etag) != 18 || etag[0] != '"' || etag[17] != '"' {
		return false
	}
	h, ok := parseHex(etag[1:17])
	return ok && h == xxhash.Sum64(body)
}

// parseHex reads 16 lower-case hex digits.
func parseHex[T string | []byte](digits T) (uint64, bool) {
	if len(digits) != 16 {
		return 0, false
	}
	var h uint64
	for i := range 16 {
		c := digits[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		h = h<<4 | uint64(c)
	}
	return h, true
}

// GzipETag returns the entity tag of the gzip coding of a document whose tag is etag: a strong
// validator must differ between content codings of the same resource.
func GzipETag(etag string) string { return string(AppendGzipETag(nil, etag)) }

// AppendGzipETag appends GzipETag(etag) to dst.
func AppendGzipETag(dst []byte, etag string) []byte {
	if len(etag) < 2 || etag[len(etag)-1] != '"' {
		return append(dst, etag...)
	}
	dst = append(dst, etag[:len(etag)-1]...)
	return append(dst, `-gzip"`...)
}
