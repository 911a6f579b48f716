package domain

import (
	"fmt"
	"slices"
)

func validateMenuTypes(in []MenuTypeInput, fe *FieldErrorList) []MenuType {
	out := []MenuType{}
	if len(in) > maxMenuTypes {
		fe.add("menu_types", "more than %d menu types", maxMenuTypes)
		return out
	}
	seen := map[Slug]bool{}
	for i, m := range in {
		p := fmt.Sprintf("menu_types[%d]", i)
		attrs := m.validateAttrs(p, i, fe)
		if attrs.Slug != "" {
			if seen[attrs.Slug] {
				fe.add(p+".slug", "duplicate menu type slug %q", attrs.Slug)
			}
			seen[attrs.Slug] = true
		}
		mt := MenuType{MenuTypeAttrs: attrs, Versions: []MenuVersion{}}
		if len(m.Versions) > maxVersions {
			fe.add(p+".versions", "more than %d versions", maxVersions)
		}
		ids := map[Slug]bool{}
		for j, v := range m.Versions {
			if fe.Full() {
				break // counted as far as it counts: the rest is not looked at
			}
			vp := fmt.Sprintf("%s.versions[%d]", p, j)
			mv := v.validate(vp+".", attrs, fe)
			if mv.ID != "" {
				if ids[mv.ID] {
					fe.add(vp+".id", "duplicate version id %q", mv.ID)
				}
				ids[mv.ID] = true
			}
			mt.Versions = append(mt.Versions, mv)
		}
		out = append(out, mt)
	}
	return out
}

func (m MenuTypeInput) validateAttrs(p string, position int, fe *FieldErrorList) MenuTypeAttrs {
	a := MenuTypeAttrs{Name: m.Name, Position: position}
	var err error
	if a.Slug, err = ParseSlug(m.Slug); err != nil {
		fe.add(p+".slug", "%v", err)
	}
	if Blank(m.Name) {
		fe.add(p+".name", "required")
	} else if err := validateLine(m.Name, maxName); err != nil {
		fe.add(p+".name", "%v", err)
	}
	if a.Kind, err = ParseMenuKind(m.Kind); err != nil {
		fe.add(p+".kind", "%v", err)
	}
	if a.Source, err = ParseMenuSource(m.Source); err != nil {
		fe.add(p+".source", "%v", err)
	}
	if m.WebDelivery == nil {
		fe.add(p+".web_delivery", "required")
	} else {
		a.WebDelivery = *m.WebDelivery
	}
	if a.Rotation, err = ParseRotation(m.Rotation); err != nil {
		fe.add(p+".rotation", "%v", err)
		a.Rotation = RotationNone // an unknown rotation is one error, not one per version
	}
	return a
}

// validate checks a version of a menu type with attributes mt; prefix ends with a dot or is
// empty. It returns the version in the aggregate's types.
func (v VersionInput) validate(prefix string, mt MenuTypeAttrs, fe *FieldErrorList) MenuVersion {
	out := MenuVersion{Assets: []Asset{}, Sections: []Section{}}
	var err error
	if out.ID, err = ParseSlug(v.ID); err != nil {
		fe.add(prefix+"id", "%v", err)
	}
	out.ReferenceDate = optDate(func() string { return prefix }, "reference_date", v.ReferenceDate, fe)
	if mt.Rotation.Dated() && out.ReferenceDate == nil && v.ReferenceDate == nil {
		fe.add(prefix+"reference_date", "required for a menu type with %s rotation", mt.Rotation)
	}
	if len(v.Assets) > maxAssets {
		fe.add(prefix+"assets", "more than %d files", maxAssets)
	}
	for i, a := range v.Assets {
		if fe.Full() {
			break
		}
		out.Assets = append(out.Assets, a.validate(func() string { return fmt.Sprintf("%sassets[%d]", prefix, i) }, fe))
	}
	if mt.Source == SourceUploaded && len(v.Sections) > 0 {
		fe.add(prefix+"sections", "must be empty for an uploaded menu: its content is in assets")
	}
	if len(v.Sections) > maxSections {
		fe.add(prefix+"sections", "more than %d sections", maxSections)
	}
	itemIDs := map[int64]bool{}
	for i, s := range v.Sections {
		if fe.Full() {
			break
		}
		sp := func() string { return fmt.Sprintf("%ssections[%d]", prefix, i) }
		out.Sections = append(out.Sections, s.validate(sp, i, itemIDs, fe))
	}
	slices.SortStableFunc(out.Sections, func(a, b Section) int { return a.Position - b.Position })
	return out
}

// validate checks a file of a version at path p, which is written only for a field it rejects:
// an import checks every file, section and item of every menu.
func (a AssetInput) validate(p func() string, fe *FieldErrorList) Asset {
	var as Asset
	var err error
	if as.LanguageScope, err = ParseLanguageScope(a.LanguageScope); err != nil {
		fe.add(p()+".language_scope", "%v", err)
	}
	if len(a.URLs) == 0 {
		fe.add(p()+".urls", "at least one url is required")
	}
	if len(a.URLs) > maxPages {
		fe.add(p()+".urls", "more than %d pages", maxPages)
	}
	for k, u := range a.URLs {
		if fe.Full() {
			break
		}
		if err := ValidateFileRef(u); err != nil {
			fe.add(fmt.Sprintf("%s.urls[%d]", p(), k), "%v", err)
		}
	}
	as.URLs = slices.Clone(a.URLs)
	if as.URLs == nil {
		as.URLs = []string{}
	}
	return as
}

// validate checks the i-th section of a version at path p, written only for a field it rejects;
// itemIDs holds the ids of the version's items checked so far, an id being unique in its version.
func (s SectionInput) validate(p func() string, i int, itemIDs map[int64]bool, fe *FieldErrorList) Section {
	sec := Section{Items: []Item{}}
	if s.Name == nil {
		fe.add(p()+".name", "required")
	} else {
		sec.Name = s.Name.validate(func() string { return p() + ".name" }, validateLine, maxName, fe)
	}
	if s.Position == nil {
		sec.Position = i
	} else {
		sec.Position = *s.Position
	}
	if len(s.Items) > maxItems {
		fe.add(p()+".items", "more than %d items", maxItems)
	}
	for j, it := range s.Items {
		if fe.Full() {
			break
		}
		ip := func() string { return fmt.Sprintf("%s.items[%d]", p(), j) }
		item := it.validate(ip, fe)
		if it.ID != nil {
			if itemIDs[item.ID] {
				fe.add(ip()+".id", "duplicate item id %d in this version", item.ID)
			}
			itemIDs[item.ID] = true
		}
		sec.Items = append(sec.Items, item)
	}
	return sec
}

// validate checks an item at path p, written only for a field it rejects.
func (it ItemInput) validate(p func() string, fe *FieldErrorList) Item {
	item := Item{GlutenFree: it.GlutenFree, Vegetarian: it.Vegetarian, Vegan: it.Vegan, ChefRecommendation: it.ChefRecommendation}
	switch {
	case it.ID == nil:
		fe.add(p()+".id", "required")
	case *it.ID <= 0:
		fe.add(p()+".id", "want a positive integer")
	default:
		item.ID = *it.ID
	}
	if it.Name == nil {
		fe.add(p()+".name", "required")
	} else {
		item.Name = it.Name.validate(func() string { return p() + ".name" }, validateLine, maxName, fe)
	}
	if it.Description != nil {
		d := it.Description.validate(func() string { return p() + ".description" }, validateText, maxDescription, fe)
		item.Description = &d
	}
	if it.ALaCarte == nil {
		fe.add(p()+".a_la_carte", "required")
	} else {
		item.ALaCarte = *it.ALaCarte
	}
	if it.Price != nil {
		pr, err := ParsePrice(*it.Price)
		if err != nil {
			fe.add(p()+".price", "%v", err)
		}
		item.Price = &pr
	}
	if it.ALaCarte != nil {
		switch {
		case *it.ALaCarte && it.Price == nil:
			fe.add(p()+".price", "required for an a la carte item")
		case !*it.ALaCarte && it.Price != nil:
			fe.add(p()+".price", "must be null for an item that is not a la carte")
		}
	}
	return item
}
