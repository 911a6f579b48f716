package projections

import (
	"bytes"
	"maps"
	"slices"

	"github.com/opencarte/publisher/projections/dockey"
)

// update is the outcome of projecting the content of an establishment against its stored bundle.
type update struct {
	bundle dockey.Bundle
	// write says the bundle differs from the stored one and must be stored.
	write bool
	// resources lists the documents whose bytes changed, in Change.Resources order. It is
	// non-empty exactly when the revision rose.
	resources []string
}

// next decides the bundle that follows prev, the stored bundle (nil when none is stored), now that
// the establishment's content is c. floor is the lowest revision a rise may take: the stream
// sequence of the record that caused the change.
//
// The revision rises, to max(floor, prev.Revision+1), exactly when the bytes of at least one
// document differ once both are stamped with the same revision. When only access fields (or entity
// tags) differ, the bundle is rewritten with the stored revision; when nothing differs, nothing is
// written. A revision therefore never goes back, and replaying the same log over the same stored
// bundles gives the same revisions.
func next(prev *dockey.Bundle, c content, floor int64) update {
	if prev == nil {
		b := c.bundle(max(floor, 1))
		return update{bundle: b, write: true, resources: changedResources(nil, &b)}
	}
	same := c.bundle(prev.Revision)
	changed := changedResources(prev, &same)
	if len(changed) == 0 {
		// Keep the stored codings: the bodies they compress are the same.
		copyCodings(prev, &same)
		return update{bundle: same, write: !sameAccess(prev, &same) || !sameETags(prev, &same)}
	}
	b := c.bundle(max(floor, prev.Revision+1))
	return update{bundle: b, write: true, resources: changed}
}

// changedResources lists the resources whose document bytes differ between a and b (a nil a has
// no documents): establishment, hours, menus, then menus/<slug> by slug for every menu detail that
// changed, appeared or disappeared.
func changedResources(a, b *dockey.Bundle) []string {
	if a == nil {
		a = &dockey.Bundle{}
	}
	var out []string
	if !sameBody(a.Establishment, b.Establishment) {
		out = append(out, ResourceEstablishment)
	}
	if !sameBody(a.Hours, b.Hours) {
		out = append(out, ResourceHours)
	}
	if !sameVariants(a.Menus, b.Menus) {
		out = append(out, ResourceMenus)
	}
	slugs := make([]string, 0, len(a.MenuDetails)+len(b.MenuDetails))
	for slug := range a.MenuDetails {
		slugs = append(slugs, slug)
	}
	for slug := range b.MenuDetails {
		if _, ok := a.MenuDetails[slug]; !ok {
			slugs = append(slugs, slug)
		}
	}
	slices.Sort(slugs)
	for _, slug := range slugs {
		va, inA := a.MenuDetails[slug]
		vb, inB := b.MenuDetails[slug]
		if inA != inB || !sameVariants(va, vb) {
			out = append(out, MenuResource(slug))
		}
	}
	return out
}

func sameBody(a, b dockey.Document) bool { return bytes.Equal(a.Body, b.Body) }

func sameVariants(a, b dockey.Variants) bool {
	return sameBody(a.All, b.All) && sameBody(a.FR, b.FR) && sameBody(a.EN, b.EN)
}

// sameETags reports whether every document of a and b has the same entity tag; it is called on
// bundles whose bodies are equal, so it only differs for tags computed another way.
func sameETags(a, b *dockey.Bundle) bool {
	tags := func(x *dockey.Bundle) []string {
		out := []string{x.Establishment.ETag, x.Hours.ETag, x.Menus.All.ETag, x.Menus.FR.ETag, x.Menus.EN.ETag}
		for _, slug := range slices.Sorted(maps.Keys(x.MenuDetails)) {
			v := x.MenuDetails[slug]
			out = append(out, slug, v.All.ETag, v.FR.ETag, v.EN.ETag)
		}
		return out
	}
	return slices.Equal(tags(a), tags(b))
}

// copyCodings gives the documents of dst the gzip codings of the documents of src with the same
// bodies.
func copyCodings(src, dst *dockey.Bundle) {
	var codings = map[string][]byte{}
	eachDocument(src, func(d *dockey.Document) { codings[string(d.Body)] = d.Gzip })
	eachDocument(dst, func(d *dockey.Document) {
		if z, ok := codings[string(d.Body)]; ok && len(d.Gzip) == 0 {
			d.Gzip = z
		}
	})
}
