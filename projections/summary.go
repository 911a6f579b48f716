package projections

import (
	"encoding/binary"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/opencarte/publisher/projections/dockey"
)

// BundleSummary is what the projector keeps of an establishment's stored bundle: its revision,
// its access fields, and for each document a digest of the body and its entity tag. Deciding the
// next bundle needs nothing more, and a summary takes a few hundred bytes where the bundle it
// describes takes tens of kilobytes.
type BundleSummary struct {
	revision int64
	sequence uint64 // the bundle's Sequence: the record that last wrote it
	base     int64  // the Base and Starts of the bundle of a day ahead; zero otherwise
	starts   int64
	access   dockey.Bundle // access fields only: no documents, no revision
	docs     map[string]docSummary
}

// docSummary describes one document: the 64-bit xxhash of its body, independent of how entity
// tags are made, and its entity tag.
type docSummary struct {
	digest uint64
	hashed bool // digest is known: a stored tag of another form gives none
	etag   string
}

// Revision is the content_revision of the bundle s describes.
func (s *BundleSummary) Revision() int64 { return s.revision }

// Sequence is the sequence of the record that last wrote the bundle s describes.
func (s *BundleSummary) Sequence() uint64 { return s.sequence }

// Base is, for the bundle of a day ahead s describes, the revision of the current bundle it was
// rendered beside; 0 for a current bundle.
func (s *BundleSummary) Base() int64 { return s.base }

// Starts is, for the bundle of a day ahead s describes, the instant that day starts (Unix
// seconds); 0 for a current bundle.
func (s *BundleSummary) Starts() int64 { return s.starts }

// Started returns what NextSummaryOver decides when the day ahead whose bundle s describes is
// recorded and nothing else changes, beside the current bundle s was rendered beside: the current
// bundle takes that day's documents, access and revision, written by the record sequence. The
// establishment's content is then the one s was rendered from, so its decision needs no new
// rendering.
func (s *BundleSummary) Started(sequence uint64) *BundleSummary {
	c := *s // the documents' map is shared: a summary's is never written once made
	c.sequence, c.base, c.starts = sequence, 0, 0
	return &c
}

// Status is the status of the establishment of the bundle s describes: dockey.StatusActive when
// its documents are public.
func (s *BundleSummary) Status() string { return s.access.Status }

// Served reports whether the read API serves the bundle s describes (see Served).
func (s *BundleSummary) Served() bool { return Served(&s.access) }

// Summarize returns the summary of b.
func Summarize(b *dockey.Bundle) *BundleSummary {
	s := &BundleSummary{revision: b.Revision, sequence: b.Sequence, base: b.Base, starts: b.Starts, access: accessFields(b), docs: make(map[string]docSummary, len(fixedDocuments)+3*len(b.MenuDetails))}
	EachDocument(b, func(name string, d *dockey.Document) {
		s.docs[name] = docSummary{digest: xxhash.Sum64(d.Body), hashed: true, etag: d.ETag}
	})
	return s
}

// summaryAt returns what Summarize returns for c.Bundle(revision) stored by the record sequence,
// without stamping a document: the digest of each is that of its template's parts, hashed one
// after the other.
func (c Rendering) summaryAt(revision int64, sequence uint64) *BundleSummary {
	s := &BundleSummary{revision: revision, sequence: sequence, access: accessFields(&c.access), docs: make(map[string]docSummary, len(fixedDocuments)+3*len(c.details))}
	if !c.public {
		// No document: Summarize finds those of the fixed resources, empty.
		for _, name := range fixedDocuments {
			s.docs[name] = docSummary{digest: emptyDigest, hashed: true}
		}
		return s
	}
	var digits [20]byte
	number := strconv.AppendInt(digits[:0], revision, 10)
	add := func(name string, t *template) {
		d := t.digest(number)
		s.docs[name] = docSummary{digest: d, hashed: true, etag: etagOf(d)}
	}
	variants := func(prefix string, vt *variantTemplates) {
		add(prefix+".all", &vt.all)
		add(prefix+".fr", &vt.fr)
		add(prefix+".en", &vt.en)
	}
	add(ResourceEstablishment, &c.establishment)
	add(ResourceHours, &c.hours)
	variants(ResourceMenus, &c.menus)
	for slug, vt := range c.details {
		variants(MenuResource(slug), &vt)
	}
	for i, name := range [...]string{ResourceJSONLD + ".fr", ResourceJSONLD + ".en"} {
		d := xxhash.Sum64(c.jsonld[i])
		s.docs[name] = docSummary{digest: d, hashed: true, etag: etagOf(d)}
	}
	return s
}

// fixedDocuments names the documents every bundle has, whatever its menus.
var fixedDocuments = []string{
	ResourceEstablishment, ResourceHours, ResourceMenus + ".all", ResourceMenus + ".fr", ResourceMenus + ".en",
	ResourceJSONLD + ".fr", ResourceJSONLD + ".en",
}

// sameDocuments reports whether a and b describe the same documents, by name and digest: what
// changedSince finds no change in. A document whose digest a does not know differs.
func sameDocuments(a, b *BundleSummary) bool {
	if len(a.docs) != len(b.docs) {
		return false
	}
	for name, d := range b.docs {
		if old, ok := a.docs[name]; !ok || !old.hashed || old.digest != d.digest {
			return false
		}
	}
	return true
}

// sameTags reports whether every document b describes has the entity tag a records for it, as
// (*summary).sameTags does of a bundle.
func sameTags(a, b *BundleSummary) bool {
	for name, d := range b.docs {
		if a.docs[name].etag != d.etag {
			return false
		}
	}
	return true
}

// accessFields returns b without its documents and revision.
func accessFields(b *dockey.Bundle) dockey.Bundle {
	return dockey.Bundle{
		Slug: b.Slug, Status: b.Status, APIEnabled: b.APIEnabled, KeyHash: b.KeyHash,
		MenuRedirectEnabled: b.MenuRedirectEnabled, MasterMenuURL: b.MasterMenuURL, Redirects: b.Redirects,
	}
}

// changedSince lists the resources of b whose documents differ from those s describes, in
// Change.Resources order (see inOrder), a menu detail that appeared or disappeared included. A nil
// s has no documents.
func changedSince(s *BundleSummary, b *dockey.Bundle) []string {
	if s == nil {
		s = &BundleSummary{}
	}
	changed := map[string]bool{}
	seen := map[string]bool{}
	EachDocument(b, func(name string, d *dockey.Document) {
		seen[name] = true
		if old, ok := s.docs[name]; !ok || !old.hashed || old.digest != xxhash.Sum64(d.Body) {
			changed[resourceOf(name)] = true
		}
	})
	for name := range s.docs {
		if !seen[name] {
			changed[resourceOf(name)] = true
		}
	}
	return inOrder(changed)
}

// resourceOf returns the resource of a document's name: the name without its variant. Slugs
// hold no dot, so the variant is what follows the last one.
func resourceOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// sameTags reports whether every document of b has the entity tag s records for it; it is
// asked of bundles whose bodies are those s describes, so it only differs for tags made another
// way.
func (s *BundleSummary) sameTags(b *dockey.Bundle) bool {
	same := true
	EachDocument(b, func(name string, d *dockey.Document) {
		same = same && s.docs[name].etag == d.ETag
	})
	return same
}

// Same reports whether s and o describe the same bundle: revision, for a day ahead the bundle it
// was rendered beside and its start, access fields and every document's digest and tag. A nil
// summary is the same as none other.
func (s *BundleSummary) Same(o *BundleSummary) bool {
	if s == nil || o == nil || s.revision != o.revision || s.base != o.base || s.starts != o.starts ||
		!SameAccess(&s.access, &o.access) || len(s.docs) != len(o.docs) {
		return false
	}
	for name, d := range s.docs {
		if od, ok := o.docs[name]; !ok || !d.hashed || od != d {
			return false
		}
	}
	return true
}

// Resources lists every resource s has a document of, in Change.Resources order.
func (s *BundleSummary) Resources() []string {
	names := map[string]bool{}
	for name := range s.docs {
		names[resourceOf(name)] = true
	}
	return inOrder(names)
}

// mergeResources returns every resource of lists once, in Change.Resources order.
func mergeResources(lists ...[]string) []string {
	names := map[string]bool{}
	for _, l := range lists {
		for _, r := range l {
			names[r] = true
		}
	}
	return inOrder(names)
}

// inOrder lists the resources of names in Change.Resources order: establishment, hours, menus,
// the menu details by slug, then jsonld. It empties names.
func inOrder(names map[string]bool) []string {
	var out []string
	for _, r := range []string{ResourceEstablishment, ResourceHours, ResourceMenus} {
		if names[r] {
			out = append(out, r)
			delete(names, r)
		}
	}
	jsonld := names[ResourceJSONLD]
	delete(names, ResourceJSONLD)
	out = append(out, slices.Sorted(maps.Keys(names))...)
	if jsonld {
		out = append(out, ResourceJSONLD)
	}
	return out
}

// storedDoc, storedVariants and storedBundle are a stored bundle without its bodies and codings,
// which SummarizeStored skips rather than decodes in a bundle of the JSON form of earlier
// versions: the documents are almost all of its bytes. A bundle in the binary form frames them
// by their lengths, and is decoded whole.
type storedDoc struct {
	ETag string `json:"etag"`
}

type storedVariants struct {
	All storedDoc `json:"all"`
	FR  storedDoc `json:"fr"`
	EN  storedDoc `json:"en"`
}

type storedLocalized struct {
	FR storedDoc `json:"fr"`
	EN storedDoc `json:"en"`
}

type storedBundle struct {
	Slug                string                     `json:"slug"`
	Revision            int64                      `json:"content_revision"`
	Sequence            uint64                     `json:"log_sequence"`
	Base                int64                      `json:"ahead_of"`
	Starts              int64                      `json:"starts"`
	Status              string                     `json:"status"`
	APIEnabled          bool                       `json:"public_api_enabled"`
	KeyHash             string                     `json:"key_hash"`
	MenuRedirectEnabled bool                       `json:"menu_redirect_enabled"`
	MasterMenuURL       string                     `json:"master_menu_url"`
	Redirects           map[string]dockey.Redirect `json:"redirects"`
	Establishment       storedDoc                  `json:"establishment"`
	Hours               storedDoc                  `json:"hours"`
	Menus               storedVariants             `json:"menus"`
	MenuDetails         map[string]storedVariants  `json:"menu_details"`
	JSONLD              storedLocalized            `json:"jsonld"`
}

// SummarizeStored returns the summary of a bundle as stored. The digest of each body is read
// from its entity tag, which ETag made from it; a tag of another form gives no digest, so that the
// document counts as changed at its next rendering: a revision may then rise once without need,
// never stay when a body changed.
func SummarizeStored(value []byte) (*BundleSummary, error) {
	if dockey.IsBinary(value) {
		var b dockey.Bundle
		if _, err := dockey.DecodeShared(value, &b, nil); err != nil {
			return nil, err
		}
		return storedOf(&b).summary(), nil
	}
	var sb storedBundle
	if err := dockey.Decode(value, &sb); err != nil {
		return nil, err
	}
	return sb.summary(), nil
}

// StoredPrint returns the fingerprint of the summary SummarizeStored gives of b once stored: what
// the projector writes beside the bundle, so that a replay compares what it replays with the
// stored bundles without reading them.
func StoredPrint(b *dockey.Bundle) uint64 { return storedOf(b).summary().Fingerprint() }

// storedOf returns what decoding b, once stored, into a storedBundle gives.
func storedOf(b *dockey.Bundle) *storedBundle {
	doc := func(d *dockey.Document) storedDoc { return storedDoc{ETag: d.ETag} }
	vars := func(v *dockey.Variants) storedVariants {
		return storedVariants{All: doc(&v.All), FR: doc(&v.FR), EN: doc(&v.EN)}
	}
	sb := &storedBundle{
		Slug: b.Slug, Revision: b.Revision, Sequence: b.Sequence, Base: b.Base, Starts: b.Starts, Status: b.Status, APIEnabled: b.APIEnabled,
		KeyHash: b.KeyHash, MenuRedirectEnabled: b.MenuRedirectEnabled, MasterMenuURL: b.MasterMenuURL,
		Redirects: b.Redirects, Establishment: doc(&b.Establishment), Hours: doc(&b.Hours), Menus: vars(&b.Menus),
		JSONLD: storedLocalized{FR: doc(&b.JSONLD.FR), EN: doc(&b.JSONLD.EN)},
	}
	if len(b.MenuDetails) > 0 {
		sb.MenuDetails = make(map[string]storedVariants, len(b.MenuDetails))
		for menuType, v := range b.MenuDetails {
			sb.MenuDetails[menuType] = vars(&v)
		}
	}
	return sb
}

// summary returns the summary of the bundle sb describes.
func (sb *storedBundle) summary() *BundleSummary {
	b := dockey.Bundle{
		Slug: sb.Slug, Revision: sb.Revision, Status: sb.Status, APIEnabled: sb.APIEnabled, KeyHash: sb.KeyHash,
		MenuRedirectEnabled: sb.MenuRedirectEnabled, MasterMenuURL: sb.MasterMenuURL, Redirects: sb.Redirects,
	}
	s := &BundleSummary{revision: sb.Revision, sequence: sb.Sequence, base: sb.Base, starts: sb.Starts, access: accessFields(&b), docs: make(map[string]docSummary, len(fixedDocuments)+3*len(sb.MenuDetails))}
	add := func(name string, d storedDoc) {
		digest, ok := digestOfTag(d.ETag)
		if d.ETag == "" {
			digest, ok = emptyDigest, true // an absent document, as a bundle that is not public holds
		}
		s.docs[name] = docSummary{digest: digest, hashed: ok, etag: d.ETag}
	}
	variants := func(prefix string, v storedVariants) {
		add(prefix+".all", v.All)
		add(prefix+".fr", v.FR)
		add(prefix+".en", v.EN)
	}
	add(ResourceEstablishment, sb.Establishment)
	add(ResourceHours, sb.Hours)
	variants(ResourceMenus, sb.Menus)
	for slug, v := range sb.MenuDetails {
		variants(MenuResource(slug), v)
	}
	add(ResourceJSONLD+".fr", sb.JSONLD.FR)
	add(ResourceJSONLD+".en", sb.JSONLD.EN)
	return s
}

// emptyDigest is the digest of an empty body: a document that is absent.
var emptyDigest = xxhash.Sum64(nil)

// digestOfTag returns the xxhash an entity tag made by ETag holds, and false for a tag of
// another form.
func digestOfTag(tag string) (uint64, bool) {
	if len(tag) != 18 || tag[0] != '"' || tag[17] != '"' {
		return 0, false
	}
	d, err := strconv.ParseUint(tag[1:17], 16, 64)
	return d, err == nil
}

// Fingerprint returns a 64-bit hash of everything same compares, and the bundle's sequence: two
// summaries with the same fingerprint are, but for a 2⁻⁶⁴ chance, the same. It is 0, which no
// summary's fingerprint is, for a summary with a document whose digest is unknown, which same
// finds the same as no other.
func (s *BundleSummary) Fingerprint() uint64 {
	h := xxhash.New()
	var n [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(n[:], v)
		_, _ = h.Write(n[:])
	}
	str := func(v string) { num(uint64(len(v))); _, _ = h.WriteString(v) }
	flag := func(v bool) {
		if v {
			num(1)
		} else {
			num(0)
		}
	}
	a := &s.access
	num(uint64(s.revision))
	num(s.sequence)
	if s.base != 0 || s.starts != 0 { // a day ahead's; the others' prints stay as they were
		num(uint64(s.base))
		num(uint64(s.starts))
	}
	str(a.Slug)
	str(a.Status)
	flag(a.APIEnabled)
	str(a.KeyHash)
	flag(a.MenuRedirectEnabled)
	str(a.MasterMenuURL)
	num(uint64(len(a.Redirects)))
	for _, name := range slices.Sorted(maps.Keys(a.Redirects)) {
		r := a.Redirects[name]
		str(name)
		str(r.FR)
		str(r.EN)
	}
	num(uint64(len(s.docs)))
	for _, name := range slices.Sorted(maps.Keys(s.docs)) {
		d := s.docs[name]
		if !d.hashed {
			return 0
		}
		str(name)
		num(d.digest)
		str(d.etag)
	}
	return max(h.Sum64(), 1)
}
