package projections

import (
	"cmp"
	"slices"

	"github.com/opencarte/publisher/domain"
)

// variant is one of the three renderings of a menu resource.
type variant int

const (
	variantAll variant = iota // no locale: French text, every asset
	variantFR                 // locale fr: French text, assets fr and fr_en
	variantEN                 // locale en: English text falling back to French, assets en and fr_en
)

var allVariants = [...]variant{variantAll, variantFR, variantEN}

// locale is the language of the variant's text.
func (v variant) locale() domain.Locale {
	if v == variantEN {
		return domain.LocaleEN
	}
	return domain.LocaleFR
}

// keeps reports whether the variant lists asset a.
func (v variant) keeps(a domain.Asset) bool {
	switch v {
	case variantFR:
		return a.Covers(domain.LocaleFR)
	case variantEN:
		return a.Covers(domain.LocaleEN)
	default:
		return true
	}
}

// activeMenu is a menu type that the API exposes, with the version it serves.
type activeMenu struct {
	domain.MenuTypeAttrs
	version domain.MenuVersion
	// referenceDate is the version's, written once for the six documents that show it.
	referenceDate *string
	// sections are the version's in French and in English, made once for the documents that
	// show them (withSections); nil until then.
	sections [2][]sectionBody
}

// withSections returns menus with their sections made in both languages.
func withSections(menus []activeMenu) []activeMenu {
	for i := range menus {
		menus[i].sections = [2][]sectionBody{sectionsOf(menus[i], domain.LocaleFR), sectionsOf(menus[i], domain.LocaleEN)}
	}
	return menus
}

// sectionsIn returns the sections of m with text in locale l, as withSections made them.
func (m *activeMenu) sectionsIn(l domain.Locale) []sectionBody {
	if l == domain.LocaleEN {
		return m.sections[1]
	}
	return m.sections[0]
}

// activeMenus returns, in position order, the menu types with web delivery that have a current
// version on the establishment's recorded date. Every other menu type does not exist publicly.
func activeMenus(e *domain.Establishment) []activeMenu {
	types := slices.Clone(e.MenuTypes)
	slices.SortStableFunc(types, func(a, b domain.MenuType) int { return cmp.Compare(a.Position, b.Position) })
	var out []activeMenu
	for _, mt := range types {
		if !mt.WebDelivery {
			continue
		}
		v, ok := mt.Current(e.Today)
		if !ok {
			continue
		}
		out = append(out, activeMenu{MenuTypeAttrs: mt.MenuTypeAttrs, version: v, referenceDate: referenceDate(v)})
	}
	return out
}

// menuListBody holds the fields of the Menu list resource that follow content_revision.
type menuListBody struct {
	MasterMenuURL *string         `json:"master_menu_url"`
	Menus         []menuEntryBody `json:"menus"`
}

type menuEntryBody struct {
	MenuType      menuTypeBody `json:"menu_type"`
	ReferenceDate *string      `json:"reference_date"`
	Assets        []assetBody  `json:"assets"`
}

type menuTypeBody struct {
	Slug   string `json:"slug"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Source string `json:"source"`
}

type assetBody struct {
	LanguageScope string   `json:"language_scope"`
	URLs          []string `json:"urls"`
}

// menuDetailBody holds the fields of the Menu detail resource that follow content_revision.
type menuDetailBody struct {
	MenuType      menuTypeBody  `json:"menu_type"`
	ReferenceDate *string       `json:"reference_date"`
	Assets        []assetBody   `json:"assets"`
	Sections      []sectionBody `json:"sections"`
}

type sectionBody struct {
	Name     string     `json:"name"`
	Position int        `json:"position"`
	Items    []itemBody `json:"items"`
}

type itemBody struct {
	ID                 int64   `json:"id"`
	Name               string  `json:"name"`
	Description        *string `json:"description"`
	Price              *string `json:"price"`
	ALaCarte           bool    `json:"a_la_carte"`
	GlutenFree         bool    `json:"gluten_free"`
	Vegetarian         bool    `json:"vegetarian"`
	Vegan              bool    `json:"vegan"`
	ChefRecommendation bool    `json:"chef_recommendation"`
}

func menuListDoc(e *domain.Establishment, menus []activeMenu, v variant) menuListBody {
	body := menuListBody{MasterMenuURL: e.MasterMenuURL, Menus: make([]menuEntryBody, 0, len(menus))}
	for _, m := range menus {
		body.Menus = append(body.Menus, menuEntryBody{
			MenuType:      menuTypeOf(m.MenuTypeAttrs),
			ReferenceDate: m.referenceDate,
			Assets:        assetsOf(m.version, v),
		})
	}
	return body
}

func menuDetailDoc(m activeMenu, v variant) menuDetailBody {
	return menuDetailBody{
		MenuType:      menuTypeOf(m.MenuTypeAttrs),
		ReferenceDate: m.referenceDate,
		Assets:        assetsOf(m.version, v),
		Sections:      m.sectionsIn(v.locale()),
	}
}

func menuTypeOf(a domain.MenuTypeAttrs) menuTypeBody {
	return menuTypeBody{Slug: string(a.Slug), Name: a.Name, Kind: string(a.Kind), Source: string(a.Source)}
}

func referenceDate(v domain.MenuVersion) *string {
	if v.ReferenceDate == nil || v.ReferenceDate.IsZero() {
		return nil
	}
	return ptr(v.ReferenceDate.String())
}

// assetsOf returns the files of version ver that variant v lists, in their given order.
func assetsOf(ver domain.MenuVersion, v variant) []assetBody {
	out := make([]assetBody, 0, len(ver.Assets))
	for _, a := range ver.Assets {
		if !v.keeps(a) {
			continue
		}
		urls := a.URLs // encoded at once, never changed
		if urls == nil {
			urls = []string{}
		}
		out = append(out, assetBody{LanguageScope: string(a.LanguageScope), URLs: urls})
	}
	return out
}

// sectionsOf returns the sections of a generated menu ordered by position, their items in their
// given order, with text in locale l falling back to French field by field. An uploaded menu has
// no sections: its content is in its files.
func sectionsOf(m activeMenu, l domain.Locale) []sectionBody {
	if m.Source == domain.SourceUploaded {
		return []sectionBody{}
	}
	byPosition := func(a, b domain.Section) int { return cmp.Compare(a.Position, b.Position) }
	sections := m.version.Sections
	if !slices.IsSortedFunc(sections, byPosition) {
		sections = slices.Clone(sections)
		slices.SortStableFunc(sections, byPosition)
	}
	out := make([]sectionBody, 0, len(sections))
	for _, s := range sections {
		sb := sectionBody{Name: s.Name.In(l), Position: s.Position, Items: make([]itemBody, 0, len(s.Items))}
		// The descriptions and prices the items point to, in one allocation for the section.
		texts := make([]string, 0, 2*len(s.Items))
		text := func(v string) *string {
			texts = append(texts, v)
			return &texts[len(texts)-1]
		}
		for _, it := range s.Items {
			ib := itemBody{
				ID:                 it.ID,
				Name:               it.Name.In(l),
				ALaCarte:           it.ALaCarte,
				GlutenFree:         it.GlutenFree,
				Vegetarian:         it.Vegetarian,
				Vegan:              it.Vegan,
				ChefRecommendation: it.ChefRecommendation,
			}
			if it.Description != nil {
				ib.Description = text(it.Description.In(l))
			}
			if it.Price != nil {
				ib.Price = text(string(*it.Price))
			}
			sb.Items = append(sb.Items, ib)
		}
		out = append(out, sb)
	}
	return out
}
