package dockey

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// EncodeBundle returns the stored form of b: compact JSON, the fields in the order and with the
// escaping of encoding/json without HTML escaping, in which the document bodies appear byte for
// byte as rendered, so that what a reader decodes is what was rendered and what its entity tag
// covers. The encoding is written by hand: it is on the path of every stored change, and
// encoding/json would scan each body twice more (validity, compaction) for nothing, projections.Render
// making compact JSON; the projector checks that every body is JSON before it stores a bundle, and a
// reader takes a body whose entity tag is its own as it is (DecodeShared). An empty body is
// written null.
func EncodeBundle(b *Bundle) ([]byte, error) {
	// The size is summed over copies of the menu details: encoding b must not write to it.
	size := 512 + len(b.MasterMenuURL) + 64*len(b.Redirects)
	docSize := func(d *Document) int { return len(d.Body) + base64.StdEncoding.EncodedLen(len(d.Gzip)) + 64 }
	variantsSize := func(v *Variants) int { return docSize(&v.All) + docSize(&v.FR) + docSize(&v.EN) }
	size += docSize(&b.Establishment) + docSize(&b.Hours) + variantsSize(&b.Menus) + docSize(&b.JSONLD.FR) + docSize(&b.JSONLD.EN)
	for _, v := range b.MenuDetails {
		size += variantsSize(&v)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"slug":`)
	writeString(buf, b.Slug)
	buf.WriteString(`,"content_revision":`)
	buf.WriteString(strconv.FormatInt(b.Revision, 10))
	if b.Sequence != 0 {
		buf.WriteString(`,"log_sequence":`)
		buf.WriteString(strconv.FormatUint(b.Sequence, 10))
	}
	if b.Base != 0 {
		buf.WriteString(`,"ahead_of":`)
		buf.WriteString(strconv.FormatInt(b.Base, 10))
	}
	if b.Starts != 0 {
		buf.WriteString(`,"starts":`)
		buf.WriteString(strconv.FormatInt(b.Starts, 10))
	}
	buf.WriteString(`,"status":`)
	writeString(buf, b.Status)
	buf.WriteString(`,"public_api_enabled":`)
	buf.WriteString(strconv.FormatBool(b.APIEnabled))
	if b.KeyHash != "" {
		buf.WriteString(`,"key_hash":`)
		writeString(buf, b.KeyHash)
	}
	buf.WriteString(`,"menu_redirect_enabled":`)
	buf.WriteString(strconv.FormatBool(b.MenuRedirectEnabled))
	if b.MasterMenuURL != "" {
		buf.WriteString(`,"master_menu_url":`)
		writeString(buf, b.MasterMenuURL)
	}
	if len(b.Redirects) > 0 {
		buf.WriteString(`,"redirects":`)
		writeObject(buf, b.Redirects, func(r Redirect) {
			buf.WriteByte('{')
			if r.FR != "" {
				buf.WriteString(`"fr":`)
				writeString(buf, r.FR)
			}
			if r.EN != "" {
				if r.FR != "" {
					buf.WriteByte(',')
				}
				buf.WriteString(`"en":`)
				writeString(buf, r.EN)
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
		writeObject(buf, b.MenuDetails, func(v Variants) { writeVariants(buf, &v) })
	}
	buf.WriteString(`,"jsonld":{"fr":`)
	writeDocument(buf, &b.JSONLD.FR)
	buf.WriteString(`,"en":`)
	writeDocument(buf, &b.JSONLD.EN)
	buf.WriteString(`}}`)
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
		writeString(buf, key)
		buf.WriteByte(':')
		value(m[key])
	}
	buf.WriteByte('}')
}

func writeVariants(buf *bytes.Buffer, v *Variants) {
	buf.WriteString(`{"all":`)
	writeDocument(buf, &v.All)
	buf.WriteString(`,"fr":`)
	writeDocument(buf, &v.FR)
	buf.WriteString(`,"en":`)
	writeDocument(buf, &v.EN)
	buf.WriteByte('}')
}

func writeDocument(buf *bytes.Buffer, d *Document) {
	buf.WriteString(`{"body":`)
	if len(d.Body) == 0 {
		buf.WriteString("null")
	} else {
		buf.Write(d.Body)
	}
	buf.WriteString(`,"etag":`)
	writeString(buf, d.ETag)
	if len(d.Gzip) > 0 {
		buf.WriteString(`,"gzip":"`)
		buf.Grow(base64.StdEncoding.EncodedLen(len(d.Gzip)))
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), d.Gzip))
		buf.WriteByte('"')
	}
	buf.WriteByte('}')
}

// writeString writes s as a JSON string the way encoding/json does without HTML escaping. Text
// of plain printable ASCII, nearly every string of a bundle, is written as it is. It writes what
// events.WriteJSONString writes of records: this package imports nothing of the module, so the
// encoder of bundles keeps its own, and FuzzEncodeBundle in projections checks the whole bundle
// against encoding/json.
func writeString(buf *bytes.Buffer, s string) {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // the newline Encode adds
}
