package domain

import (
	"io"
	"math"
)

// EstablishmentInput is the import format: one JSON document holding the whole content of one
// establishment, with the read API's field names. Translatable text is {"fr": ..., "en": ...}.
// Webhook endpoints and the API key are not part of it.
type EstablishmentInput struct {
	Slug                 string              `json:"slug"`
	Status               string              `json:"status"`
	TimeZone             string              `json:"timezone"`
	Settings             *SettingsInput      `json:"settings"`
	Name                 string              `json:"name"`
	Description          *string             `json:"description"`
	BusinessType         string              `json:"business_type"`
	PublicCategory       *string             `json:"public_category"`
	WebsiteURL           *string             `json:"website_url"`
	MenuURL              *string             `json:"menu_url"`
	Contact              *ContactInput       `json:"contact"`
	Location             *LocationInput      `json:"location"`
	LogoURL              *string             `json:"logo_url"`
	BusinessHoursSummary *string             `json:"business_hours_summary"`
	BusinessHours        []OpeningRangeInput `json:"business_hours"`
	SpecialHours         []SpecialHoursInput `json:"special_hours"`
	MasterMenuURL        *string             `json:"master_menu_url"`
	MenuTypes            []MenuTypeInput     `json:"menu_types"`
}

// SettingsInput holds the settings of an import document; an absent key leaves the setting as it
// is.
type SettingsInput struct {
	PublicAPIEnabled    *bool `json:"public_api_enabled"`
	MenuRedirectEnabled *bool `json:"menu_redirect_enabled"`
}

// ContactInput is the contact object of the Establishment resource.
type ContactInput struct {
	Email       *string `json:"email"`
	PhoneNumber *string `json:"phone_number"`
}

// LocationInput is the location object of the Establishment resource.
type LocationInput struct {
	Address   *string  `json:"address"`
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
}

// OpeningRangeInput is one business_hours element.
type OpeningRangeInput struct {
	OpenDay   string  `json:"open_day"`
	OpenTime  string  `json:"open_time"`
	CloseDay  *string `json:"close_day"`
	CloseTime *string `json:"close_time"`
}

// SpecialHoursInput is one special_hours element.
type SpecialHoursInput struct {
	StartDate string  `json:"start_date"`
	EndDate   *string `json:"end_date"`
	OpenTime  *string `json:"open_time"`
	CloseTime *string `json:"close_time"`
	Closed    *bool   `json:"closed"`
}

// MenuTypeInput is one menu type with its versions in publication order.
type MenuTypeInput struct {
	Slug        string         `json:"slug"`
	Name        string         `json:"name"`
	Kind        string         `json:"kind"`
	Source      string         `json:"source"`
	WebDelivery *bool          `json:"web_delivery"`
	Rotation    string         `json:"rotation"`
	Versions    []VersionInput `json:"versions"`
}

// VersionInput is one menu version.
type VersionInput struct {
	ID            string         `json:"id"`
	ReferenceDate *string        `json:"reference_date"`
	Assets        []AssetInput   `json:"assets"`
	Sections      []SectionInput `json:"sections"`
}

// AssetInput is one menu file.
type AssetInput struct {
	LanguageScope string   `json:"language_scope"`
	URLs          []string `json:"urls"`
}

// SectionInput is one menu section.
type SectionInput struct {
	Name     *TextInput  `json:"name"`
	Position *int        `json:"position"`
	Items    []ItemInput `json:"items"`
}

// ItemInput is one menu item.
type ItemInput struct {
	ID                 *int64     `json:"id"`
	Name               *TextInput `json:"name"`
	Description        *TextInput `json:"description"`
	Price              *string    `json:"price"`
	ALaCarte           *bool      `json:"a_la_carte"`
	GlutenFree         bool       `json:"gluten_free"`
	Vegetarian         bool       `json:"vegetarian"`
	Vegan              bool       `json:"vegan"`
	ChefRecommendation bool       `json:"chef_recommendation"`
}

// TextInput is a translatable text.
type TextInput struct {
	FR *string `json:"fr"`
	EN *string `json:"en"`
}

// Limits on text sizes, so that a document stays well inside a KV value.
const (
	maxName        = 200
	maxDescription = 4000
	maxShort       = 500
	maxMenuTypes   = 50
	maxVersions    = 100
	maxSections    = 100
	maxItems       = 500
	maxAssets      = 20
	maxPages       = 50
	maxHours       = 100
)

// ParseInput decodes and validates an import document. It reports every bad field of the
// document at once; what depends on the establishment (its slug, its status) is checked by
// Import.
func ParseInput(r io.Reader) (EstablishmentInput, error) {
	var s EstablishmentInput
	if err := DecodeStrict(r, &s); err != nil {
		return EstablishmentInput{}, err
	}
	if _, err := s.validate(); err != nil {
		return EstablishmentInput{}, err
	}
	return s, nil
}

// validated is a validated import document, in the aggregate's types.
type validated struct {
	slug         Slug
	status       Status
	timeZone     string
	apiEnabled   *bool
	redirect     *bool
	identity     Identity
	hours        Hours
	specialHours []SpecialHours
	masterMenu   *string
	menuTypes    []MenuType
}

func (s EstablishmentInput) validate() (validated, error) {
	var fe FieldErrorList
	var c validated
	var err error
	if c.slug, err = ParseSlug(s.Slug); err != nil {
		fe.add("slug", "%v", err)
	}
	if c.status, err = ParseStatus(s.Status); err != nil {
		fe.add("status", "%v", err)
	}
	c.timeZone = s.TimeZone
	if c.timeZone == "" {
		c.timeZone = DefaultTimeZone
	}
	if _, ok := loadZone(c.timeZone); !ok {
		fe.add("timezone", "unknown IANA time zone %q", s.TimeZone)
	}
	if s.Settings != nil {
		c.apiEnabled, c.redirect = s.Settings.PublicAPIEnabled, s.Settings.MenuRedirectEnabled
	}
	c.identity = s.validateIdentity(&fe)
	c.hours = validateHours(s.BusinessHoursSummary, s.BusinessHours, &fe)
	c.specialHours = validateSpecialHours(s.SpecialHours, &fe)
	c.masterMenu = optFileRef("master_menu_url", s.MasterMenuURL, &fe)
	c.menuTypes = validateMenuTypes(s.MenuTypes, &fe)
	return c, fe.Err()
}

func (s EstablishmentInput) validateIdentity(fe *FieldErrorList) Identity {
	id := Identity{
		Name:           s.Name,
		Description:    optText("description", s.Description, maxDescription, fe),
		PublicCategory: optText("public_category", s.PublicCategory, maxShort, fe),
		WebsiteURL:     optURL("website_url", s.WebsiteURL, fe),
		MenuURL:        optURL("menu_url", s.MenuURL, fe),
		LogoURL:        optURL("logo_url", s.LogoURL, fe),
	}
	if Blank(s.Name) {
		fe.add("name", "required")
	} else if err := validateLine(s.Name, maxName); err != nil {
		fe.add("name", "%v", err)
	}
	bt, err := ParseBusinessType(s.BusinessType)
	if err != nil {
		fe.add("business_type", "%v", err)
	}
	id.BusinessType = bt
	if c := s.Contact; c != nil {
		if c.Email != nil {
			if err := ValidateEmail(*c.Email); err != nil {
				fe.add("contact.email", "%v", err)
			}
			id.Email = c.Email
		}
		if c.PhoneNumber != nil {
			if err := ValidatePhone(*c.PhoneNumber); err != nil {
				fe.add("contact.phone_number", "%v", err)
			}
			id.PhoneNumber = c.PhoneNumber
		}
	}
	if l := s.Location; l != nil {
		id.Address = optText("location.address", l.Address, maxShort, fe)
		if l.Latitude != nil && (math.IsNaN(*l.Latitude) || *l.Latitude < -90 || *l.Latitude > 90) {
			fe.add("location.latitude", "want a number from -90 to 90")
		}
		if l.Longitude != nil && (math.IsNaN(*l.Longitude) || *l.Longitude < -180 || *l.Longitude > 180) {
			fe.add("location.longitude", "want a number from -180 to 180")
		}
		if (l.Latitude == nil) != (l.Longitude == nil) {
			fe.add("location", "latitude and longitude go together")
		}
		id.Latitude, id.Longitude = l.Latitude, l.Longitude
	}
	return id
}

// validate checks a translatable text at path p, written only for a language it rejects, with
// check (validateLine for a name, validateText for a longer text). A blank English text is no
// translation: readers get the French one.
func (t TextInput) validate(p func() string, check func(string, int) error, max int, fe *FieldErrorList) Text {
	var out Text
	if t.FR == nil || Blank(*t.FR) {
		fe.add(p()+".fr", "required")
	} else if err := check(*t.FR, max); err != nil {
		fe.add(p()+".fr", "%v", err)
	} else {
		out.FR = *t.FR
	}
	if t.EN != nil && !Blank(*t.EN) {
		if err := check(*t.EN, max); err != nil {
			fe.add(p()+".en", "%v", err)
		} else {
			out.EN = *t.EN
		}
	}
	return out
}

func optText(field string, s *string, max int, fe *FieldErrorList) *string {
	if s == nil {
		return nil
	}
	if err := validateText(*s, max); err != nil {
		fe.add(field, "%v", err)
	}
	return s
}

func optURL(field string, s *string, fe *FieldErrorList) *string {
	return optChecked(field, s, ValidateURL, fe)
}

// optFileRef is optURL for a reference to a menu file: a URL or the digest of an uploaded file.
func optFileRef(field string, s *string, fe *FieldErrorList) *string {
	return optChecked(field, s, ValidateFileRef, fe)
}

// optChecked returns s, noting in fe why check refuses it, when it is set.
func optChecked(field string, s *string, check func(string) error, fe *FieldErrorList) *string {
	if s == nil {
		return nil
	}
	if err := check(*s); err != nil {
		fe.add(field, "%v", err)
	}
	return s
}

// optClock parses an optional time of day, at path p() followed by member.
func optClock(p func() string, member string, s *string, fe *FieldErrorList) *ClockTime {
	if s == nil {
		return nil
	}
	c, err := ParseClockTime(*s)
	if err != nil {
		fe.add(p()+member, "%v", err)
	}
	return &c
}

// optDate parses an optional date, at path p() followed by member.
func optDate(p func() string, member string, s *string, fe *FieldErrorList) *LocalDate {
	if s == nil {
		return nil
	}
	d, err := ParseLocalDate(*s)
	if err != nil {
		fe.add(p()+member, "%v", err)
		return nil
	}
	return &d
}
