package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
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
	if blank(s.Name) {
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

func validateHours(summary *string, in []OpeningRangeInput, fe *FieldErrorList) Hours {
	h := Hours{Summary: optText("business_hours_summary", summary, maxDescription, fe), Ranges: []OpeningRange{}}
	if len(in) > maxHours {
		fe.add("business_hours", "more than %d ranges", maxHours)
		return h
	}
	for i, r := range in {
		p := fmt.Sprintf("business_hours[%d]", i)
		var or OpeningRange
		var err error
		if or.OpenDay, err = ParseWeekday(r.OpenDay); err != nil {
			fe.add(p+".open_day", "%v", err)
		}
		openOK := true
		if or.OpenTime, err = ParseClockTime(r.OpenTime); err != nil {
			fe.add(p+".open_time", "%v", err)
			openOK = false
		}
		if r.CloseDay != nil {
			d, err := ParseWeekday(*r.CloseDay)
			if err != nil {
				fe.add(p+".close_day", "%v", err)
			}
			or.CloseDay = &d
		}
		or.CloseTime = optClock(p+".close_time", r.CloseTime, fe)
		if openOK && or.OpenDay != 0 && or.CloseDay != nil && *or.CloseDay != 0 {
			checkRangeEnd(p, or, r.CloseTime != nil, fe)
		}
		h.Ranges = append(h.Ranges, or)
	}
	return h
}

// checkRangeEnd checks where a range with a closing day ends: a close_time is then required,
// and the range ends later the same day, or the next day no later than it opened (it lasts at
// most a day).
func checkRangeEnd(p string, r OpeningRange, hasCloseTime bool, fe *FieldErrorList) {
	if !hasCloseTime {
		fe.add(p+".close_time", "required with close_day")
		return
	}
	if r.CloseTime == nil {
		return // invalid, reported
	}
	next := r.OpenDay%7 + 1
	switch open, end := r.OpenTime.Minutes(), r.CloseTime.Minutes(); *r.CloseDay {
	case r.OpenDay:
		if end <= open {
			fe.add(p+".close_time", "%s is not after open_time %s on the same day", r.CloseTime, r.OpenTime)
		}
	case next:
		if end > open {
			fe.add(p+".close_time", "%s on the next day: the range would last more than a day", r.CloseTime)
		}
	default:
		fe.add(p+".close_day", "%s: want the opening day or the next one", *r.CloseDay)
	}
}

func validateSpecialHours(in []SpecialHoursInput, fe *FieldErrorList) []SpecialHours {
	out := []SpecialHours{}
	if len(in) > maxHours {
		fe.add("special_hours", "more than %d exceptions", maxHours)
		return out
	}
	for i, s := range in {
		p := fmt.Sprintf("special_hours[%d]", i)
		var sh SpecialHours
		var err error
		if sh.StartDate, err = ParseLocalDate(s.StartDate); err != nil {
			fe.add(p+".start_date", "%v", err)
		}
		sh.EndDate = optDate(p+".end_date", s.EndDate, fe)
		if sh.EndDate != nil && !sh.StartDate.IsZero() && sh.EndDate.Before(sh.StartDate) {
			fe.add(p+".end_date", "before start_date")
		}
		if sh.EndDate != nil && *sh.EndDate == sh.StartDate {
			sh.EndDate = nil // a one-day exception has no end_date
		}
		sh.OpenTime = optClock(p+".open_time", s.OpenTime, fe)
		sh.CloseTime = optClock(p+".close_time", s.CloseTime, fe)
		switch {
		case s.Closed == nil:
			fe.add(p+".closed", "required")
		case !*s.Closed && s.OpenTime == nil && s.CloseTime == nil:
			fe.add(p+".open_time", "an exception that is not a closure needs open_time or close_time")
		default:
			sh.Closed = *s.Closed
		}
		out = append(out, sh)
	}
	return out
}

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
	if blank(m.Name) {
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
	out.ReferenceDate = optDate(prefix+"reference_date", v.ReferenceDate, fe)
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
		p := fmt.Sprintf("%sassets[%d]", prefix, i)
		var as Asset
		if as.LanguageScope, err = ParseLanguageScope(a.LanguageScope); err != nil {
			fe.add(p+".language_scope", "%v", err)
		}
		if len(a.URLs) == 0 {
			fe.add(p+".urls", "at least one url is required")
		}
		if len(a.URLs) > maxPages {
			fe.add(p+".urls", "more than %d pages", maxPages)
		}
		for k, u := range a.URLs {
			if fe.Full() {
				break
			}
			if err := ValidateFileRef(u); err != nil {
				fe.add(fmt.Sprintf("%s.urls[%d]", p, k), "%v", err)
			}
		}
		as.URLs = slices.Clone(a.URLs)
		if as.URLs == nil {
			as.URLs = []string{}
		}
		out.Assets = append(out.Assets, as)
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
		p := fmt.Sprintf("%ssections[%d]", prefix, i)
		sec := Section{Items: []Item{}}
		if s.Name == nil {
			fe.add(p+".name", "required")
		} else {
			sec.Name = s.Name.validate(p+".name", validateLine, maxName, fe)
		}
		if s.Position == nil {
			sec.Position = i
		} else {
			sec.Position = *s.Position
		}
		if len(s.Items) > maxItems {
			fe.add(p+".items", "more than %d items", maxItems)
		}
		for j, it := range s.Items {
			if fe.Full() {
				break
			}
			ip := fmt.Sprintf("%s.items[%d]", p, j)
			item := it.validate(ip, fe)
			if it.ID != nil {
				if itemIDs[item.ID] {
					fe.add(ip+".id", "duplicate item id %d in this version", item.ID)
				}
				itemIDs[item.ID] = true
			}
			sec.Items = append(sec.Items, item)
		}
		out.Sections = append(out.Sections, sec)
	}
	slices.SortStableFunc(out.Sections, func(a, b Section) int { return a.Position - b.Position })
	return out
}

func (it ItemInput) validate(p string, fe *FieldErrorList) Item {
	item := Item{GlutenFree: it.GlutenFree, Vegetarian: it.Vegetarian, Vegan: it.Vegan, ChefRecommendation: it.ChefRecommendation}
	switch {
	case it.ID == nil:
		fe.add(p+".id", "required")
	case *it.ID <= 0:
		fe.add(p+".id", "want a positive integer")
	default:
		item.ID = *it.ID
	}
	if it.Name == nil {
		fe.add(p+".name", "required")
	} else {
		item.Name = it.Name.validate(p+".name", validateLine, maxName, fe)
	}
	if it.Description != nil {
		d := it.Description.validate(p+".description", validateText, maxDescription, fe)
		item.Description = &d
	}
	if it.ALaCarte == nil {
		fe.add(p+".a_la_carte", "required")
	} else {
		item.ALaCarte = *it.ALaCarte
	}
	if it.Price != nil {
		pr, err := ParsePrice(*it.Price)
		if err != nil {
			fe.add(p+".price", "%v", err)
		}
		item.Price = &pr
	}
	if it.ALaCarte != nil {
		switch {
		case *it.ALaCarte && it.Price == nil:
			fe.add(p+".price", "required for an a la carte item")
		case !*it.ALaCarte && it.Price != nil:
			fe.add(p+".price", "must be null for an item that is not a la carte")
		}
	}
	return item
}

// validate checks a translatable text with check (validateLine for a name, validateText for a
// longer text). A blank English text is no translation: readers get the French one.
func (t TextInput) validate(p string, check func(string, int) error, max int, fe *FieldErrorList) Text {
	var out Text
	if t.FR == nil || blank(*t.FR) {
		fe.add(p+".fr", "required")
	} else if err := check(*t.FR, max); err != nil {
		fe.add(p+".fr", "%v", err)
	} else {
		out.FR = *t.FR
	}
	if t.EN != nil && !blank(*t.EN) {
		if err := check(*t.EN, max); err != nil {
			fe.add(p+".en", "%v", err)
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

func optClock(field string, s *string, fe *FieldErrorList) *ClockTime {
	if s == nil {
		return nil
	}
	c, err := ParseClockTime(*s)
	if err != nil {
		fe.add(field, "%v", err)
	}
	return &c
}

func optDate(field string, s *string, fe *FieldErrorList) *LocalDate {
	if s == nil {
		return nil
	}
	d, err := ParseLocalDate(*s)
	if err != nil {
		fe.add(field, "%v", err)
		return nil
	}
	return &d
}

// ImportResult is what an import decided: the events to append and, when the import enabled the
// public API, the new key to show once.
type ImportResult struct {
	Events []Event
	APIKey APIKey
}

// Import validates the import document s and returns the events that bring the establishment to
// it. Only what differs produces events: importing the current content again returns none. key
// is used only when the import turns the public API on.
func (e *Establishment) Import(s EstablishmentInput, key APIKey) (ImportResult, error) {
	c, err := s.validate()
	if err != nil {
		return ImportResult{}, err
	}
	if c.slug != e.Slug {
		return ImportResult{}, &FieldError{Field: "slug", Reason: fmt.Sprintf("%q does not match the establishment %q", c.slug, e.Slug)}
	}
	if e.Status == StatusActive && c.status == StatusDraft && s.Status != "" {
		return ImportResult{}, &FieldError{Field: "status", Reason: "an active establishment cannot go back to draft"}
	}
	var res ImportResult
	add := func(ev Event) { res.Events = append(res.Events, ev) }
	if !e.Created {
		add(EstablishmentCreated{Slug: e.Slug, TimeZone: c.timeZone})
	} else if e.TimeZone != c.timeZone {
		add(TimeZoneChanged{TimeZone: c.timeZone})
	}
	if !e.Created || !sameJSON(e.Identity, c.identity) {
		add(IdentityChanged{Identity: c.identity})
	}
	curHours := e.Hours
	curHours.Ranges = nonNil(curHours.Ranges)
	if !sameJSON(curHours, c.hours) {
		add(HoursChanged{Hours: c.hours})
	}
	if !sameJSON(nonNil(e.SpecialHours), c.specialHours) {
		add(SpecialHoursChanged{SpecialHours: c.specialHours})
	}
	if !sameJSON(e.MasterMenuURL, c.masterMenu) {
		add(MasterMenuChanged{URL: c.masterMenu})
	}
	for _, ev := range e.diffMenuTypes(c.menuTypes) {
		add(ev)
	}
	if c.redirect != nil && *c.redirect != e.MenuRedirectEnabled {
		add(MenuRedirectChanged{Enabled: *c.redirect})
	}
	if c.apiEnabled != nil && *c.apiEnabled != e.PublicAPIEnabled {
		if *c.apiEnabled {
			if err := key.check(); err != nil {
				return ImportResult{}, err
			}
			add(PublicAPIEnabled{KeyHash: key.Hash()})
			res.APIKey = key
		} else {
			add(PublicAPIDisabled{})
		}
	}
	if c.status == StatusActive && e.Status != StatusActive {
		add(Activated{})
	}
	return res, nil
}

// diffMenuTypes returns the events that turn the current menu types into want.
func (e *Establishment) diffMenuTypes(want []MenuType) []Event {
	var evs []Event
	wanted := map[Slug]bool{}
	for _, w := range want {
		wanted[w.Slug] = true
	}
	for _, mt := range e.MenuTypes {
		if !wanted[mt.Slug] {
			evs = append(evs, MenuTypeRemoved{MenuType: mt.Slug})
		}
	}
	for _, w := range want {
		cur, exists := e.MenuType(w.Slug)
		if !exists || cur.MenuTypeAttrs != w.MenuTypeAttrs {
			evs = append(evs, MenuTypeDefined{MenuType: w.MenuTypeAttrs})
		}
		// Versions keep publication order, which decides the latest undated version: from the first
		// position where the order differs, withdraw what is there and publish the rest again.
		split := 0
		for split < len(cur.Versions) && split < len(w.Versions) && cur.Versions[split].ID == w.Versions[split].ID {
			split++
		}
		for _, v := range cur.Versions[split:] {
			evs = append(evs, MenuVersionWithdrawn{MenuType: w.Slug, Version: v.ID})
		}
		for i, v := range w.Versions {
			if i < split && sameJSON(cur.Versions[i], v) {
				continue
			}
			evs = append(evs, MenuVersionPublished{MenuType: w.Slug, Version: v})
		}
	}
	return evs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sameJSON compares two values by their encoding, which is what the log and the documents see.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
