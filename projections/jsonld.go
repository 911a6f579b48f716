package projections

import (
	"encoding/json"
	"slices"

	"github.com/opencarte/publisher/domain"
)

// ResourceJSONLD is the resource of the schema.org JSON-LD document, listed last in
// Change.Resources.
const ResourceJSONLD = "jsonld"

// jsonldBody is the schema.org JSON-LD document of an establishment in one language: what a
// website pastes into a <script type="application/ld+json"> element for search engines. Unlike
// the other documents it holds no content_revision, which is not a schema.org term: its revision
// is the Content-Revision header's. Nothing is written null: an absent value leaves its key out.
type jsonldBody struct {
	Context      string    `json:"@context"`
	Type         string    `json:"@type"`
	Name         string    `json:"name"`
	Description  string    `json:"description,omitempty"`
	URL          string    `json:"url,omitempty"`
	Telephone    string    `json:"telephone,omitempty"`
	Email        string    `json:"email,omitempty"`
	Address      string    `json:"address,omitempty"`
	Geo          *geoLD    `json:"geo,omitempty"`
	Logo         string    `json:"logo,omitempty"`
	Image        string    `json:"image,omitempty"`
	Menu         string    `json:"menu,omitempty"`
	Hours        []hoursLD `json:"openingHoursSpecification,omitempty"`
	SpecialHours []hoursLD `json:"specialOpeningHoursSpecification,omitempty"`
	HasMenu      []menuLD  `json:"hasMenu,omitempty"`
	SubjectOf    []menuLD  `json:"subjectOf,omitempty"` // the menus of a type that is no FoodEstablishment
}

type geoLD struct {
	Type      string  `json:"@type"`
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// hoursLD is an OpeningHoursSpecification: a regular range on its days, or an exception on its
// dates.
type hoursLD struct {
	Type         string   `json:"@type"`
	DayOfWeek    []string `json:"dayOfWeek,omitempty"`
	ValidFrom    string   `json:"validFrom,omitempty"`
	ValidThrough string   `json:"validThrough,omitempty"`
	Opens        string   `json:"opens,omitempty"`
	Closes       string   `json:"closes,omitempty"`
}

type menuLD struct {
	Type             string      `json:"@type"`
	Name             string      `json:"name"`
	InLanguage       string      `json:"inLanguage"`
	TemporalCoverage string      `json:"temporalCoverage,omitempty"`
	URL              string      `json:"url,omitempty"`
	Sections         []sectionLD `json:"hasMenuSection,omitempty"`
}

type sectionLD struct {
	Type  string   `json:"@type"`
	Name  string   `json:"name"`
	Items []itemLD `json:"hasMenuItem,omitempty"`
}

type itemLD struct {
	Type        string   `json:"@type"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Offers      *offerLD `json:"offers,omitempty"`
	Diets       []string `json:"suitableForDiet,omitempty"`
}

type offerLD struct {
	Type     string      `json:"@type"`
	Price    json.Number `json:"price"`
	Currency string      `json:"priceCurrency"`
}

// currency is the currency of every price: neither the specification nor an import gives prices
// a currency, and the service takes them as euros.
const currency = "EUR"

// schemaTypes maps a business type to its schema.org type. A wine shop is a LiquorStore, "a shop
// that sells alcoholic drinks such as wine"; a caterer, which schema.org has no type for, is a
// FoodEstablishment; a type added later and not mapped yet is a LocalBusiness.
var schemaTypes = map[domain.BusinessType]schemaTypeOf{
	"restaurant":   {"Restaurant", true},
	"bar":          {"BarOrPub", true},
	"cafe":         {"CafeOrCoffeeShop", true},
	"bakery":       {"Bakery", true},
	"caterer":      {"FoodEstablishment", true},
	"wine_shop":    {"LiquorStore", false},
	"retail_store": {"Store", false},
}

// schemaTypeOf is a schema.org type and whether it is a FoodEstablishment, the only types
// schema.org gives menus to (hasMenu, menu).
type schemaTypeOf struct {
	name string
	food bool
}

// schemaType returns the schema.org type of business type bt.
func schemaType(bt domain.BusinessType) schemaTypeOf {
	if bt == "" {
		bt = defaultBusinessType
	}
	if t, ok := schemaTypes[bt]; ok {
		return t
	}
	return schemaTypeOf{"LocalBusiness", false}
}

// The schema.org enumeration members the documents name, as full IRIs.
const schemaOrg = "https://schema.org/"

var schemaDays = [...]string{
	domain.Lundi: schemaOrg + "Monday", domain.Mardi: schemaOrg + "Tuesday", domain.Mercredi: schemaOrg + "Wednesday",
	domain.Jeudi: schemaOrg + "Thursday", domain.Vendredi: schemaOrg + "Friday", domain.Samedi: schemaOrg + "Saturday",
	domain.Dimanche: schemaOrg + "Sunday",
}

// jsonldDocs returns the JSON-LD documents of e in French and in English, its menus those of
// menus. What has no language, the identity and the hours, is made once for both.
func jsonldDocs(e *domain.Establishment, menus []activeMenu) (fr, en jsonldBody) {
	id := e.Identity
	typ := schemaType(id.BusinessType)
	base := jsonldBody{
		Context:      "https://schema.org",
		Type:         typ.name,
		Name:         id.Name,
		Description:  text(id.Description),
		URL:          text(id.WebsiteURL),
		Telephone:    text(id.PhoneNumber),
		Email:        text(id.Email),
		Address:      text(id.Address),
		Logo:         text(id.LogoURL),
		Image:        text(id.LogoURL),
		Menu:         text(id.MenuURL),
		Hours:        regularHoursLD(e.Hours.Ranges),
		SpecialHours: specialHoursLD(e.SpecialHoursComing()),
	}
	if lat, lon := finite(id.Latitude), finite(id.Longitude); lat != nil && lon != nil {
		base.Geo = &geoLD{Type: "GeoCoordinates", Latitude: *lat, Longitude: *lon}
	}
	if !typ.food {
		base.Menu = "" // menus are a FoodEstablishment's: a shop's are works about it
	}
	withMenus := func(v variant) jsonldBody {
		doc := base
		list := make([]menuLD, 0, len(menus))
		for _, m := range menus {
			list = append(list, menuOf(m, v))
		}
		if typ.food {
			doc.HasMenu = list
		} else {
			doc.SubjectOf = list
		}
		return doc
	}
	return withMenus(variantFR), withMenus(variantEN)
}

// text returns *p, or "" for nil or blank text (see domain.Blank), which the document leaves
// out.
func text(p *string) string {
	if p == nil || domain.Blank(*p) {
		return ""
	}
	return *p
}

// regularHoursLD returns the regular ranges as OpeningHoursSpecifications: one per distinct
// pair of opening and closing times, naming every day that has it, in the order of the first
// such day (lundi first) and then of opening time. A range that ends after midnight closes
// before it opens, as schema.org reads it: "closes" earlier than "opens" spans into the next
// day. A range without a closing time has no "closes". A range of 24 hours, which closes when it
// opens, would read as a closure: from midnight it is the whole day, 00:00 to 23:59 as schema.org
// and Google write it; from another time it runs to midnight and from midnight the next day.
func regularHoursLD(ranges []domain.OpeningRange) []hoursLD {
	var out []hoursLD
	add := func(d domain.Weekday, opens, closes string) {
		day := schemaDays[d]
		for i := range out {
			if out[i].Opens == opens && out[i].Closes == closes {
				if !slices.Contains(out[i].DayOfWeek, day) {
					out[i].DayOfWeek = append(out[i].DayOfWeek, day)
				}
				return
			}
		}
		out = append(out, hoursLD{Type: "OpeningHoursSpecification", DayOfWeek: []string{day}, Opens: opens, Closes: closes})
	}
	for _, r := range sortedRanges(ranges) {
		if r.OpenDay < domain.Lundi || r.OpenDay > domain.Dimanche {
			continue
		}
		opens := r.OpenTime.String()
		switch {
		case r.CloseTime == nil:
			add(r.OpenDay, opens, "")
		case *r.CloseTime != r.OpenTime:
			add(r.OpenDay, opens, r.CloseTime.String())
		case opens == midnight:
			add(r.OpenDay, midnight, endOfDay)
		default:
			add(r.OpenDay, opens, midnight)
			add(nextDay(r.OpenDay), midnight, opens)
		}
	}
	return out
}

// The times schema.org gives a day closed all day (opens and closes at midnight) and a day open
// all day (from midnight to endOfDay).
const (
	midnight = "00:00"
	endOfDay = "23:59"
)

// specialHoursLD returns the coming exceptions as OpeningHoursSpecifications valid from their
// first to their last day, a one-day exception from and through the same date. A closure opens
// and closes at 00:00, as schema.org says of a day closed all day, and an exception open from
// midnight to midnight closes at 23:59. An exception that gives only its opening or its closing
// time has only "opens" or "closes".
func specialHoursLD(coming []domain.SpecialHours) []hoursLD {
	out := make([]hoursLD, 0, len(coming))
	for _, s := range coming {
		h := hoursLD{Type: "OpeningHoursSpecification", ValidFrom: s.StartDate.String(), ValidThrough: s.LastDay().String()}
		switch {
		case s.Closed:
			h.Opens, h.Closes = midnight, midnight
		default:
			if s.OpenTime != nil {
				h.Opens = s.OpenTime.String()
			}
			if s.CloseTime != nil {
				h.Closes = s.CloseTime.String()
			}
			if h.Opens == midnight && h.Closes == midnight {
				h.Closes = endOfDay // open all day, not closed
			}
		}
		out = append(out, h)
	}
	return out
}

// menuOf returns current menu m as a Menu in the language of variant v: the version of a menu
// that rotates covers the period of its reference date, a day or an ISO 8601 interval of days
// (temporalCoverage); its url is the file /r/menus redirects to in that language, when there is
// one; a generated menu lists its sections and items, with text in that language falling back to
// French field by field, each price an Offer in euros, a number written as the item gives it,
// with two decimals, and the item's diets schema.org's.
func menuOf(m activeMenu, v variant) menuLD {
	l := v.locale()
	out := menuLD{Type: "Menu", Name: m.Name, InLanguage: string(l), URL: firstPage(m.version.Assets, domain.LanguageScope(l))}
	if ref := m.version.ReferenceDate; ref != nil && !ref.IsZero() {
		if first, last, ok := m.Rotation.Period(*ref); ok && first == last {
			out.TemporalCoverage = first.String()
		} else if ok {
			out.TemporalCoverage = first.String() + "/" + last.String()
		}
	}
	sections := m.sectionsIn(l)
	if len(sections) > 0 {
		out.Sections = make([]sectionLD, 0, len(sections))
	}
	for _, s := range sections {
		sec := sectionLD{Type: "MenuSection", Name: s.Name, Items: make([]itemLD, 0, len(s.Items))}
		offers := make([]offerLD, 0, len(s.Items)) // the items' offers, in one allocation
		for _, it := range s.Items {
			ld := itemLD{Type: "MenuItem", Name: it.Name, Description: text(it.Description), Diets: diets(it)}
			if it.Price != nil {
				offers = append(offers, offerLD{Type: "Offer", Price: json.Number(*it.Price), Currency: currency})
				ld.Offers = &offers[len(offers)-1]
			}
			sec.Items = append(sec.Items, ld)
		}
		out.Sections = append(out.Sections, sec)
	}
	return out
}

// dietSets holds every list of schema.org diets an item can have, indexed by its flags (gluten
// free 1, vegetarian 2, vegan 4), so that listing an item's diets allocates nothing.
var dietSets = func() (sets [8][]string) {
	names := [...]string{schemaOrg + "GlutenFreeDiet", schemaOrg + "VegetarianDiet", schemaOrg + "VeganDiet"}
	for i := 1; i < len(sets); i++ {
		for bit, name := range names {
			if i&(1<<bit) != 0 {
				sets[i] = append(sets[i], name)
			}
		}
	}
	return sets
}()

// diets returns the schema.org diets item it is suitable for, nil for none.
func diets(it itemBody) []string {
	i := 0
	for bit, on := range [...]bool{it.GlutenFree, it.Vegetarian, it.Vegan} {
		if on {
			i |= 1 << bit
		}
	}
	return dietSets[i]
}
