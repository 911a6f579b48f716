package projections

import (
	"maps"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/opencarte/publisher/projections/dockey"
)

// summary is what the projector keeps of an establishment's stored bundle: its revision, its
// access fields, and for each document a digest of the body and its entity tag. Deciding the
// next bundle needs nothing more, and a summary takes a few hundred bytes where the bundle it
// describes takes tens of kilobytes.
type summary struct {
	revision int64
	access   dockey.Bundle // access fields only: no documents, no revision
	docs     map[string]docSummary
}

// docSummary describes one document: the 64-bit xxhash of its body, independent of how entity
// tags are made, and its entity tag.
type docSummary struct {
	digest uint64
	etag   string
}

// resourceDocs calls fn with the resource name of every document of b, the variant's name after
// a dot for menu resources ("menus.fr", "menus/la-carte.en"), and the document.
func resourceDocs(b *dockey.Bundle, fn func(name string, d *dockey.Document)) {
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
	}
}

// summarize returns the summary of b.
func summarize(b *dockey.Bundle) *summary {
	s := &summary{revision: b.Revision, access: accessFields(b), docs: make(map[string]docSummary, 5+3*len(b.MenuDetails))}
	resourceDocs(b, func(name string, d *dockey.Document) {
		s.docs[name] = docSummary{digest: xxhash.Sum64(d.Body), etag: d.ETag}
	})
	return s
}

// accessFields returns b without its documents and revision.
func accessFields(b *dockey.Bundle) dockey.Bundle {
	return dockey.Bundle{
		Slug: b.Slug, Status: b.Status, APIEnabled: b.APIEnabled, KeyHash: b.KeyHash,
		MenuRedirectEnabled: b.MenuRedirectEnabled, MasterMenuURL: b.MasterMenuURL, Redirects: b.Redirects,
	}
}

// changedSince lists the resources of b whose documents differ from those s describes, in
// Change.Resources order: establishment, hours, menus, then menus/<slug> by slug for every menu
// detail that changed, appeared or disappeared. A nil s has no documents.
func changedSince(s *summary, b *dockey.Bundle) []string {
	if s == nil {
		s = &summary{}
	}
	changed := map[string]bool{}
	seen := map[string]bool{}
	resourceDocs(b, func(name string, d *dockey.Document) {
		seen[name] = true
		if old, ok := s.docs[name]; !ok || old.digest != xxhash.Sum64(d.Body) {
			changed[resourceOf(name)] = true
		}
	})
	for name := range s.docs {
		if !seen[name] {
			changed[resourceOf(name)] = true
		}
	}
	var out []string
	for _, r := range []string{ResourceEstablishment, ResourceHours, ResourceMenus} {
		if changed[r] {
			out = append(out, r)
			delete(changed, r)
		}
	}
	return append(out, slices.Sorted(maps.Keys(changed))...)
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
func (s *summary) sameTags(b *dockey.Bundle) bool {
	same := true
	resourceDocs(b, func(name string, d *dockey.Document) {
		same = same && s.docs[name].etag == d.ETag
	})
	return same
}

// resources lists every resource s has a document of, in Change.Resources order.
func (s *summary) resources() []string {
	names := map[string]bool{}
	for name := range s.docs {
		names[resourceOf(name)] = true
	}
	var out []string
	for _, r := range []string{ResourceEstablishment, ResourceHours, ResourceMenus} {
		if names[r] {
			out = append(out, r)
			delete(names, r)
		}
	}
	return append(out, slices.Sorted(maps.Keys(names))...)
}
