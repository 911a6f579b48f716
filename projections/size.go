package projections

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math"

	gojson "github.com/goccy/go-json"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
)

// Value returns what the projector stores for e at revision: its bundle, rendered, compressed and
// encoded.
func Value(e *domain.Establishment, revision int64) ([]byte, error) {
	b := Render(e, revision)
	Compress(&b)
	return dockey.EncodeBundle(&b)
}

// EncodedSize returns the size in bytes of the bundle the projector would store for e, with a
// revision as long as any it can have, once e is active: what a write side checks against the
// bucket's maximum value size before accepting a change, so that no accepted change is left
// unserved, a draft's at its activation included. It
// compresses every document, which costs far more than rendering it: FitsIn avoids that. files is
// the projector's Config.FilesURL, under which the documents give uploaded files their URLs.
func EncodedSize(e *domain.Establishment, files string) (int, error) {
	b := renderAll(withFileURLs(e, files), nil).Bundle(math.MaxInt64)
	Compress(&b)
	data, err := dockey.EncodeBundle(&b)
	return len(data), err
}

// FitsIn reports whether the bundle the projector would store for e, once active, takes at most
// limit bytes, and its size when it had to be measured. It first bounds the size from e's
// encoded content (StateBound), which costs a fraction of rendering; then, over the limit,
// from the rendered documents alone (a gzip coding is never much larger than what it codes);
// and compresses only when that bound is over the limit too, which only very large
// establishments approach.
func FitsIn(e *domain.Establishment, files string, limit int) (fits bool, size int, err error) {
	if bound, err := StateBound(e, files); err != nil || bound <= limit {
		return err == nil, 0, err
	}
	bound, err := sizeBound(renderAll(withFileURLs(e, files), nil).Bundle(math.MaxInt64))
	if err != nil || bound <= limit {
		return err == nil, 0, err
	}
	size, err = EncodedSize(e, files)
	return size <= limit, size, err
}

// CreatedBound bounds the stored size of the bundle of an establishment whose every event is in
// the events given, eventBytes of payloads in all: one just created. Rendering makes of no byte of
// an event's payload more than 12 bytes of documents: a text goes into the three variants of its
// menu detail and the two JSON-LD documents; a file URL or a menu type's name into the three
// variants of the list and of the detail and the two JSON-LD documents; an item's price
// ("price":"1.00") into its three details and the two JSON-LD offers
// ("offers":{"@type":"Offer","price":1.00,"priceCurrency":"EUR"}), under twelve times its bytes,
// and its diets less. A text is no longer in a document than in the payload, which escapes <, >
// and & as the JSON-LD does. A document's gzip coding adds at most 4/3 of it and some bytes (the
// bound of a coding in base64, as earlier versions stored it; stored as it is, it takes less): 12 × (1 + 4/3) is 28, taken twice for what the argument leaves out (keys, summaries,
// redirect targets), plus 256 KiB for the fixed part of up to 157 documents. A write side checks
// a creation against this bound without rendering it, and renders only the rare one over it. The
// argument does not hold for an establishment that names uploaded files by their digests, which
// the documents show as longer URLs: NamesFiles says which.
func CreatedBound(eventBytes int) int { return 56*eventBytes + 256<<10 }

// StateBound bounds the stored size of the bundle of e from its content as the log holds it, by
// the argument of CreatedBound: the encoded aggregate holds every value its documents show once,
// encoded as the events' payloads encode it (the same types, the same escaping), and the rest of
// it (status, key hash, dates) only adds bytes. Files named by their digests are given their URLs
// under files first, as the documents give them. A write side checks a change to an existing
// establishment against it, since the change's events alone say nothing of the content kept.
func StateBound(e *domain.Establishment, files string) (int, error) {
	data, err := gojson.Marshal(withFileURLs(e, files))
	if err != nil {
		return 0, fmt.Errorf("bound the documents of %s: %w", e.Slug, err)
	}
	return CreatedBound(len(data)), nil
}

// NamesFiles says whether e names an uploaded file by its digest, which its documents show as the
// file's URL.
func NamesFiles(e *domain.Establishment) bool { return refersByDigest(e) }

// sizeBound returns a size the stored form of b, once compressed, cannot exceed.
func sizeBound(b dockey.Bundle) (int, error) {
	b.MenuDetails = maps.Clone(b.MenuDetails) // emptied below: the caller's map stays whole
	bound := 0
	EachDocument(&b, func(_ string, d *dockey.Document) {
		// The body as it is, its tag escaped, and a gzip coding of at most the body plus its
		// block and stream overheads, in base64 as earlier versions stored it; then the member
		// names and punctuation. The binary form stores less.
		n := len(d.Body)
		bound += n + 2*len(d.ETag) + base64.StdEncoding.EncodedLen(n+5*(n/16384+1)+18) + 64
		d.Body, d.ETag = nil, ""
	})
	rest, err := dockey.EncodeBundle(&b) // the access fields and the document skeletons
	return bound + len(rest), err
}
