package projections

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
)

// MaxBundleSize is the largest encoded bundle, in bytes, the bucket accepts. The NATS server's
// max_payload must be at least as large.
const MaxBundleSize = 8 << 20

// Bucket is the part of the KV bucket of bundles the projector uses; jetstream.KeyValue
// satisfies it.
type Bucket interface {
	// Put stores value under key.
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Get returns the value under key, or jetstream.ErrKeyNotFound.
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	// ListKeysFiltered lists the keys matching filters.
	ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error)
	// Watch passes the last value of every key matching keys, then nil, then every change.
	Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
	// Status describes the bucket.
	Status(ctx context.Context) (jetstream.KeyValueStatus, error)
}

// OpenBucket creates the bucket dockey.Bucket, or updates it to this configuration: one value
// per key, file storage, values up to MaxBundleSize, replicas copies (at least 1). The bucket is
// a *Bundles.
func OpenBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := openBucket(ctx, js, dockey.Bucket, "Rendered documents and access state, one bundle per establishment.", replicas)
	if err != nil {
		return nil, err
	}
	return NewBundles(js, kv), nil
}

// openBucket creates the bucket name, or updates it to this configuration: one value per key,
// file storage, values up to MaxBundleSize, replicas copies (at least 1).
func openBucket(ctx context.Context, js jetstream.JetStream, name, description string, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       name,
		Description:  description,
		History:      1,
		Storage:      jetstream.FileStorage,
		MaxValueSize: MaxBundleSize,
		Replicas:     max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", name, err)
	}
	return kv, nil
}

// Value returns what the projector stores for e at revision: its bundle, rendered, compressed and
// encoded.
func Value(e *domain.Establishment, revision int64) ([]byte, error) {
	b := Render(e, revision)
	compress(&b)
	return EncodeBundle(&b)
}

// EncodedSize returns the size in bytes of the bundle the projector would store for e, with a
// revision as long as any it can have, once e is active: what a write side checks against the
// bucket's maximum value size before accepting a change, so that no accepted change is left
// unserved, a draft's at its activation included. It
// compresses every document, which costs far more than rendering it: FitsIn avoids that. files is
// the projector's Config.FilesURL, under which the documents give uploaded files their URLs.
func EncodedSize(e *domain.Establishment, files string) (int, error) {
	b := renderAll(withFileURLs(e, files), nil).bundle(math.MaxInt64)
	compress(&b)
	data, err := EncodeBundle(&b)
	return len(data), err
}

// FitsIn reports whether the bundle the projector would store for e, once active, takes at most
// limit bytes,
// and its size when it had to be measured. It first bounds the size from the rendered documents
// alone (a gzip coding is never much larger than what it codes), and compresses only when that
// bound is over the limit, which only very large establishments approach.
func FitsIn(e *domain.Establishment, files string, limit int) (fits bool, size int, err error) {
	bound, err := sizeBound(renderAll(withFileURLs(e, files), nil).bundle(math.MaxInt64))
	if err != nil || bound <= limit {
		return err == nil, 0, err
	}
	size, err = EncodedSize(e, files)
	return size <= limit, size, err
}

// CreatedBound bounds the stored size of the bundle of an establishment whose every event is in
// the events given, eventBytes of payloads in all: one just created. Rendering copies no field of
// the aggregate into more than six documents (a menu version's files are in the three variants of
// the list and of the detail; its text in the three of the detail), each such copy is no larger
// than the field in its event's payload (the same JSON, one language of a text rather than two),
// and a document's gzip coding, in base64, adds at most 4/3 of it and some bytes: 6 × (1 + 4/3)
// is below 15, taken twice for what the argument leaves out (keys, summaries, redirect targets),
// plus 256 KiB for the fixed part of up to 155 documents. A write side checks a creation against
// this bound without rendering it, and renders only the rare one over it. The argument does not
// hold for an establishment that names uploaded files by their digests, which the documents
// show as longer URLs: NamesFiles says which.
func CreatedBound(eventBytes int) int { return 30*eventBytes + 256<<10 }

// NamesFiles says whether e names an uploaded file by its digest, which its documents show as the
// file's URL.
func NamesFiles(e *domain.Establishment) bool { return refersByDigest(e) }

// sizeBound returns a size the stored form of b, once compressed, cannot exceed.
func sizeBound(b dockey.Bundle) (int, error) {
	b.MenuDetails = maps.Clone(b.MenuDetails) // emptied below: the caller's map stays whole
	bound := 0
	eachDocument(&b, func(d *dockey.Document) {
		// The body as it is, its tag escaped, and a base64 gzip coding of at most the body plus
		// its block and stream overheads; then the member names and punctuation.
		n := len(d.Body)
		bound += n + 2*len(d.ETag) + base64.StdEncoding.EncodedLen(n+5*(n/16384+1)+18) + 64
		d.Body, d.ETag = nil, ""
	})
	rest, err := EncodeBundle(&b) // the access fields and the document skeletons
	return bound + len(rest), err
}

// EncodeBundle returns the stored form of b: compact JSON, the fields in the order and with the
// escaping of encoding/json without HTML escaping, in which the document bodies appear byte for
// byte as rendered, so that what a reader decodes is what was rendered and what its entity tag
// covers. The encoding is written by hand: it is on the path of every stored change, and
// encoding/json would scan each body twice more (validity, compaction) for nothing, Render making
// compact JSON; the projector checks that every body is JSON before it stores a bundle, and a
// reader takes a body whose entity tag is its own as it is (dockey.DecodeShared). An empty body is
// written null.
func EncodeBundle(b *dockey.Bundle) ([]byte, error) {
	// The size is summed without eachDocument, which writes the menu details back: encoding b
	// must not write to it.
	size := 512 + len(b.MasterMenuURL) + 64*len(b.Redirects)
	docSize := func(d *dockey.Document) int { return len(d.Body) + base64.StdEncoding.EncodedLen(len(d.Gzip)) + 64 }
	variantsSize := func(v *dockey.Variants) int { return docSize(&v.All) + docSize(&v.FR) + docSize(&v.EN) }
	size += docSize(&b.Establishment) + docSize(&b.Hours) + variantsSize(&b.Menus)
	for _, v := range b.MenuDetails {
		size += variantsSize(&v)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"slug":`)
	events.WriteJSONString(buf, b.Slug)
	buf.WriteString(`,"content_revision":`)
	buf.WriteString(strconv.FormatInt(b.Revision, 10))
	if b.Sequence != 0 {
		buf.WriteString(`,"log_sequence":`)
		buf.WriteString(strconv.FormatUint(b.Sequence, 10))
	}
	buf.WriteString(`,"status":`)
	events.WriteJSONString(buf, b.Status)
	buf.WriteString(`,"public_api_enabled":`)
	buf.WriteString(strconv.FormatBool(b.APIEnabled))
	if b.KeyHash != "" {
		buf.WriteString(`,"key_hash":`)
		events.WriteJSONString(buf, b.KeyHash)
	}
	buf.WriteString(`,"menu_redirect_enabled":`)
	buf.WriteString(strconv.FormatBool(b.MenuRedirectEnabled))
	if b.MasterMenuURL != "" {
		buf.WriteString(`,"master_menu_url":`)
		events.WriteJSONString(buf, b.MasterMenuURL)
	}
	if len(b.Redirects) > 0 {
		buf.WriteString(`,"redirects":`)
		writeObject(buf, b.Redirects, func(r dockey.Redirect) {
			buf.WriteByte('{')
			if r.FR != "" {
				buf.WriteString(`"fr":`)
				events.WriteJSONString(buf, r.FR)
			}
			if r.EN != "" {
				if r.FR != "" {
					buf.WriteByte(',')
				}
				buf.WriteString(`"en":`)
				events.WriteJSONString(buf, r.EN)
			}
			buf.WriteByte('}')
		})
	}
	buf.WriteString(`,"establishment":`)
	writeDocument(buf, &b.Establishment)
	buf.WriteString(`,"hours":`)
	writeDocument(buf, &b.Hours)
	buf.WriteString(`,"menus":`)
	writeVariants(buf, &b.Menus)
	if len(b.MenuDetails) > 0 {
		buf.WriteString(`,"menu_details":`)
		writeObject(buf, b.MenuDetails, func(v dockey.Variants) { writeVariants(buf, &v) })
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// writeObject writes m as a JSON object, its keys in order as encoding/json sorts them, each value
// written by value.
func writeObject[V any](buf *bytes.Buffer, m map[string]V, value func(V)) {
	buf.WriteByte('{')
	for i, key := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		events.WriteJSONString(buf, key)
		buf.WriteByte(':')
		value(m[key])
	}
	buf.WriteByte('}')
}

func writeVariants(buf *bytes.Buffer, v *dockey.Variants) {
	buf.WriteString(`{"all":`)
	writeDocument(buf, &v.All)
	buf.WriteString(`,"fr":`)
	writeDocument(buf, &v.FR)
	buf.WriteString(`,"en":`)
	writeDocument(buf, &v.EN)
	buf.WriteByte('}')
}

func writeDocument(buf *bytes.Buffer, d *dockey.Document) {
	buf.WriteString(`{"body":`)
	if len(d.Body) == 0 {
		buf.WriteString("null")
	} else {
		buf.Write(d.Body)
	}
	buf.WriteString(`,"etag":`)
	events.WriteJSONString(buf, d.ETag)
	if len(d.Gzip) > 0 {
		buf.WriteString(`,"gzip":"`)
		buf.Grow(base64.StdEncoding.EncodedLen(len(d.Gzip)))
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), d.Gzip))
		buf.WriteByte('"')
	}
	buf.WriteByte('}')
}
