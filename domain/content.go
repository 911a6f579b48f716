package domain

// Text is a translatable text: French always, English when the establishment gave a translation.
type Text struct {
	FR string `json:"fr"`
	EN string `json:"en,omitempty"`
}

// In returns the text in locale l, falling back to French when there is no English text.
func (t Text) In(l Locale) string {
	if l == LocaleEN && t.EN != "" {
		return t.EN
	}
	return t.FR
}

// Identity is the untranslated public identity of an establishment.
type Identity struct {
	Name           string       `json:"name"`
	Description    *string      `json:"description"`
	BusinessType   BusinessType `json:"business_type"`
	PublicCategory *string      `json:"public_category"`
	WebsiteURL     *string      `json:"website_url"`
	MenuURL        *string      `json:"menu_url"`
	Email          *string      `json:"email"`
	PhoneNumber    *string      `json:"phone_number"`
	Address        *string      `json:"address"`
	Latitude       *float64     `json:"latitude"`
	Longitude      *float64     `json:"longitude"`
	LogoURL        *string      `json:"logo_url"`
}

// OpeningRange is one regular opening range. CloseDay differs from OpenDay for a range that
// ends after midnight.
type OpeningRange struct {
	OpenDay   Weekday    `json:"open_day"`
	OpenTime  ClockTime  `json:"open_time"`
	CloseDay  *Weekday   `json:"close_day"`
	CloseTime *ClockTime `json:"close_time"`
}

// Hours is the regular weekly schedule and its optional display summary.
type Hours struct {
	Summary *string        `json:"business_hours_summary"`
	Ranges  []OpeningRange `json:"business_hours"`
}

// SpecialHours is an exceptional period: a closure, a holiday, an event.
type SpecialHours struct {
	StartDate LocalDate  `json:"start_date"`
	EndDate   *LocalDate `json:"end_date"`
	OpenTime  *ClockTime `json:"open_time"`
	CloseTime *ClockTime `json:"close_time"`
	Closed    bool       `json:"closed"`
}

// LastDay returns the last date the exception covers.
func (s SpecialHours) LastDay() LocalDate {
	if s.EndDate != nil {
		return *s.EndDate
	}
	return s.StartDate
}

// MenuTypeAttrs are the attributes of a menu type, without its versions.
type MenuTypeAttrs struct {
	Slug        Slug       `json:"slug"`
	Name        string     `json:"name"`
	Kind        MenuKind   `json:"kind"`
	Source      MenuSource `json:"source"`
	WebDelivery bool       `json:"web_delivery"`
	Rotation    Rotation   `json:"rotation"`
	Position    int        `json:"position"`
}

// MenuType is a menu type and its versions in publication order.
type MenuType struct {
	MenuTypeAttrs
	Versions []MenuVersion `json:"versions"`
}

// MenuVersion is one dated or undated version of a menu type.
type MenuVersion struct {
	ID            Slug       `json:"id"`
	ReferenceDate *LocalDate `json:"reference_date"`
	Assets        []Asset    `json:"assets"`
	Sections      []Section  `json:"sections"`
}

// Asset is one menu file, possibly of several pages.
type Asset struct {
	LanguageScope LanguageScope `json:"language_scope"`
	URLs          []string      `json:"urls"`
}

// Covers reports whether the file serves locale l: its scope is l or both languages.
func (a Asset) Covers(l Locale) bool {
	return a.LanguageScope == ScopeFREN || string(a.LanguageScope) == string(l)
}

// Section is an ordered group of items.
type Section struct {
	Name     Text   `json:"name"`
	Position int    `json:"position"`
	Items    []Item `json:"items"`
}

// Item is one dish or product of a generated menu.
type Item struct {
	ID                 int64  `json:"id"`
	Name               Text   `json:"name"`
	Description        *Text  `json:"description"`
	Price              *Price `json:"price"`
	ALaCarte           bool   `json:"a_la_carte"`
	GlutenFree         bool   `json:"gluten_free"`
	Vegetarian         bool   `json:"vegetarian"`
	Vegan              bool   `json:"vegan"`
	ChefRecommendation bool   `json:"chef_recommendation"`
}

// WebhookEndpoint is a registered receiver of change signals, as the webhook registry holds it
// and earlier logs recorded it. Its signing secret is never part of it.
type WebhookEndpoint struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}
