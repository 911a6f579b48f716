package domain

import (
	"fmt"
	"slices"
	"time"
)

// DefaultTimeZone is the time zone of an establishment that names none.
const DefaultTimeZone = "Europe/Paris"

// Establishment is the aggregate: the whole state of one establishment, rebuilt from its
// events. Commands are methods that validate and return the events to append; they never modify
// the receiver. Apply is the only way state changes.
type Establishment struct {
	Slug                Slug
	Created             bool
	Status              Status
	TimeZone            string
	Identity            Identity
	PublicAPIEnabled    bool
	APIKeyHash          string
	MenuRedirectEnabled bool
	Hours               Hours
	SpecialHours        []SpecialHours
	MasterMenuURL       *string
	MenuTypes           []MenuType // ordered by Position
	// Today is the establishment's local date as of the latest DayStarted event; zero before any.
	Today LocalDate
	// Ahead is the next local date, rendered before it starts at AheadStarts, as of the latest
	// DayAhead event after Today; zero when there is none. A DayStarted event on or after it,
	// or a change of time zone, clears it.
	Ahead       LocalDate
	AheadStarts time.Time
}

// New returns the empty aggregate of slug, before any event.
func New(slug Slug) *Establishment { return &Establishment{Slug: slug} }

// Rebuild returns the state of slug after events.
func Rebuild(slug Slug, events []Event) *Establishment {
	e := New(slug)
	for _, ev := range events {
		e.Apply(ev)
	}
	return e
}

// Apply changes the state by one event. Unknown or nonsensical events leave it as it is: the log
// is the truth and Apply never fails.
func (e *Establishment) Apply(ev Event) {
	switch ev := ev.(type) {
	case EstablishmentCreated:
		e.Created = true
		e.Status = StatusDraft
		e.TimeZone = ev.TimeZone
		e.Identity.BusinessType = "restaurant"
	case IdentityChanged:
		e.Identity = ev.Identity
	case TimeZoneChanged:
		if ev.TimeZone != e.TimeZone {
			e.Ahead, e.AheadStarts = LocalDate{}, time.Time{} // its midnight is another instant
		}
		e.TimeZone = ev.TimeZone
	case HoursChanged:
		e.Hours = ev.Hours
	case SpecialHoursChanged:
		e.SpecialHours = oneDayWithoutEnd(ev.SpecialHours)
	case MasterMenuChanged:
		e.MasterMenuURL = ev.URL
	case Activated:
		e.Status = StatusActive
	case PublicAPIEnabled:
		e.PublicAPIEnabled = true
		e.APIKeyHash = ev.KeyHash
	case PublicAPIDisabled:
		e.PublicAPIEnabled = false
		e.APIKeyHash = ""
	case APIKeyRegenerated:
		e.APIKeyHash = ev.KeyHash
	case MenuRedirectChanged:
		e.MenuRedirectEnabled = ev.Enabled
	case MenuTypeDefined:
		if i := e.menuTypeIndex(ev.MenuType.Slug); i >= 0 {
			e.MenuTypes[i].MenuTypeAttrs = ev.MenuType
		} else {
			e.MenuTypes = append(e.MenuTypes, MenuType{MenuTypeAttrs: ev.MenuType})
		}
		slices.SortStableFunc(e.MenuTypes, func(a, b MenuType) int { return a.Position - b.Position })
	case MenuTypeRemoved:
		if i := e.menuTypeIndex(ev.MenuType); i >= 0 {
			e.MenuTypes = slices.Delete(e.MenuTypes, i, i+1)
		}
	case MenuVersionPublished:
		if i := e.menuTypeIndex(ev.MenuType); i >= 0 {
			mt := &e.MenuTypes[i]
			if j := mt.versionIndex(ev.Version.ID); j >= 0 {
				mt.Versions[j] = ev.Version
			} else {
				mt.Versions = append(mt.Versions, ev.Version)
			}
		}
	case MenuVersionWithdrawn:
		if i := e.menuTypeIndex(ev.MenuType); i >= 0 {
			mt := &e.MenuTypes[i]
			if j := mt.versionIndex(ev.Version); j >= 0 {
				mt.Versions = slices.Delete(mt.Versions, j, j+1)
			}
		}
	case WebhookRegistered, WebhookRemoved:
		// Recorded when the log listed webhook endpoints; their registry, outside the log, is
		// now their one owner, and they change nothing of the establishment.
	case DayStarted:
		e.Today = ev.Date
		if !e.Ahead.IsZero() && !ev.Date.Before(e.Ahead) {
			e.Ahead, e.AheadStarts = LocalDate{}, time.Time{}
		}
	case DayAhead:
		if e.Today.Before(ev.Date) {
			e.Ahead, e.AheadStarts = ev.Date, ev.Starts.UTC()
		}
	}
}

func (e *Establishment) menuTypeIndex(slug Slug) int {
	return slices.IndexFunc(e.MenuTypes, func(mt MenuType) bool { return mt.Slug == slug })
}

// MenuType returns the menu type with slug.
func (e *Establishment) MenuType(slug Slug) (MenuType, bool) {
	if i := e.menuTypeIndex(slug); i >= 0 {
		return e.MenuTypes[i], true
	}
	return MenuType{}, false
}

func (mt *MenuType) versionIndex(id Slug) int {
	return slices.IndexFunc(mt.Versions, func(v MenuVersion) bool { return v.ID == id })
}

// Location returns the establishment's time zone, falling back to DefaultTimeZone.
func (e *Establishment) Location() *time.Location {
	if loc, ok := loadZone(e.TimeZone); ok {
		return loc
	}
	if loc, ok := loadZone(DefaultTimeZone); ok {
		return loc
	}
	return time.UTC
}

// LocalDate returns the establishment's calendar date at instant now.
func (e *Establishment) LocalDate(now time.Time) LocalDate { return DateOf(now.In(e.Location())) }

// DateDependent reports whether the public content changes with the calendar: exceptional hours,
// or a web menu type whose versions rotate by date.
func (e *Establishment) DateDependent() bool {
	if len(e.SpecialHours) > 0 {
		return true
	}
	for _, mt := range e.MenuTypes {
		if mt.WebDelivery && mt.Rotation.Dated() {
			return true
		}
	}
	return false
}

// Current returns the version of mt to serve on date today, following the menu selection rules:
// without rotation the latest published version; with a rotation the version whose period holds
// today (the latest such reference date wins), else the latest version dated before today. A
// version dated in the future is never served, and nothing dated is served while today is unknown.
func (mt MenuType) Current(today LocalDate) (MenuVersion, bool) {
	if len(mt.Versions) == 0 {
		return MenuVersion{}, false
	}
	if !mt.Rotation.Dated() {
		return mt.Versions[len(mt.Versions)-1], true
	}
	if today.IsZero() {
		return MenuVersion{}, false
	}
	best, bestRef, found, holds := MenuVersion{}, LocalDate{}, false, false
	for _, v := range mt.Versions {
		if v.ReferenceDate == nil {
			continue
		}
		ref := *v.ReferenceDate
		if today.Before(ref) {
			continue
		}
		h := periodHolds(mt.Rotation, ref, today)
		switch {
		case h && !holds, h == holds && (!found || !ref.Before(bestRef)):
			best, bestRef, found, holds = v, ref, true, h
		}
	}
	return best, found
}

// periodHolds reports whether the rotation period that contains ref also contains today.
func periodHolds(r Rotation, ref, today LocalDate) bool {
	first, last, ok := r.Period(ref)
	return ok && !today.Before(first) && !last.Before(today)
}

// SpecialHoursComing returns the exceptions whose last day is today or later, ordered by start
// date. While today is unknown every exception is kept.
func (e *Establishment) SpecialHoursComing() []SpecialHours {
	out := make([]SpecialHours, 0, len(e.SpecialHours))
	for _, s := range e.SpecialHours {
		if e.Today.IsZero() || !s.LastDay().Before(e.Today) {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b SpecialHours) int { return a.StartDate.Time().Compare(b.StartDate.Time()) })
	return out
}

// Activate moves a draft establishment to active. Activating an active one changes nothing.
func (e *Establishment) Activate() ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if e.Status == StatusActive {
		return nil, nil
	}
	return []Event{Activated{}}, nil
}

// EnableAPI turns the public API on with key, which the caller generated and shows once.
func (e *Establishment) EnableAPI(key APIKey) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if e.PublicAPIEnabled {
		return nil, fmt.Errorf("public api already enabled, regenerate the key to get a new one: %w", ErrInvalidTransition)
	}
	if err := key.check(); err != nil {
		return nil, err
	}
	return []Event{PublicAPIEnabled{KeyHash: key.Hash()}}, nil
}

// DisableAPI turns the public API off. Disabling a disabled API changes nothing.
func (e *Establishment) DisableAPI() ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if !e.PublicAPIEnabled {
		return nil, nil
	}
	return []Event{PublicAPIDisabled{}}, nil
}

// RegenerateAPIKey replaces the key by key; the previous key stops working.
func (e *Establishment) RegenerateAPIKey(key APIKey) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if !e.PublicAPIEnabled {
		return nil, ErrAPIDisabled
	}
	if err := key.check(); err != nil {
		return nil, err
	}
	return []Event{APIKeyRegenerated{KeyHash: key.Hash()}}, nil
}

// SetMenuRedirect sets menu_redirect_enabled.
func (e *Establishment) SetMenuRedirect(enabled bool) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if e.MenuRedirectEnabled == enabled {
		return nil, nil
	}
	return []Event{MenuRedirectChanged{Enabled: enabled}}, nil
}

// PublishMenuVersion validates in and adds it to menu type typ, or replaces the version with
// the same id. Publishing an identical version changes nothing.
func (e *Establishment) PublishMenuVersion(typ Slug, in VersionInput) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	i := e.menuTypeIndex(typ)
	if i < 0 {
		return nil, fmt.Errorf("menu type %q: %w", typ, ErrMenuTypeNotFound)
	}
	mt := e.MenuTypes[i]
	var fe FieldErrorList
	v := in.validate("", mt.MenuTypeAttrs, &fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	if j := mt.versionIndex(v.ID); j >= 0 && sameJSON(mt.Versions[j], v) {
		return nil, nil
	}
	return []Event{MenuVersionPublished{MenuType: typ, Version: v}}, nil
}

// SetMasterMenu makes url, a URL or the digest of an uploaded file, the unified card file, or
// removes it when url is nil.
func (e *Establishment) SetMasterMenu(url *string) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	var fe FieldErrorList
	url = optFileRef("master_menu_url", url, &fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	if sameJSON(e.MasterMenuURL, url) {
		return nil, nil
	}
	return []Event{MasterMenuChanged{URL: url}}, nil
}

// AddMenuAsset adds file a, last, to version id of menu type typ, which must exist.
func (e *Establishment) AddMenuAsset(typ, id Slug, a AssetInput) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	mt, ok := e.MenuType(typ)
	if !ok {
		return nil, fmt.Errorf("menu type %q: %w", typ, ErrMenuTypeNotFound)
	}
	j := mt.versionIndex(id)
	if j < 0 {
		return nil, fmt.Errorf("menu type %q version %q: %w", typ, id, ErrMenuVersionNotFound)
	}
	in := mt.Versions[j].input()
	in.Assets = append(in.Assets, a)
	return e.PublishMenuVersion(typ, in)
}

// WithdrawMenuVersion removes version id of menu type typ.
func (e *Establishment) WithdrawMenuVersion(typ, id Slug) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	i := e.menuTypeIndex(typ)
	if i < 0 {
		return nil, fmt.Errorf("menu type %q: %w", typ, ErrMenuTypeNotFound)
	}
	if e.MenuTypes[i].versionIndex(id) < 0 {
		return nil, fmt.Errorf("menu type %q version %q: %w", typ, id, ErrMenuVersionNotFound)
	}
	return []Event{MenuVersionWithdrawn{MenuType: typ, Version: id}}, nil
}

// StartDay records that the local date is now date. It changes nothing when date is already the
// recorded day or earlier: the calendar never goes back.
func (e *Establishment) StartDay(date LocalDate) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if date.IsZero() || !e.Today.Before(date) && !e.Today.IsZero() {
		return nil, nil
	}
	return []Event{DayStarted{Date: date}}, nil
}

// PrepareDay records that the next local date, date, starts at the instant starts, so that its
// documents are ready before it. It changes nothing when the establishment has no recorded day,
// when date is not after it, or when that day is already prepared for that instant.
func (e *Establishment) PrepareDay(date LocalDate, starts time.Time) ([]Event, error) {
	if err := e.mustExist(); err != nil {
		return nil, err
	}
	if date.IsZero() || starts.IsZero() || e.Today.IsZero() || !e.Today.Before(date) ||
		e.Ahead == date && e.AheadStarts.Equal(starts) {
		return nil, nil
	}
	return []Event{DayAhead{Date: date, Starts: starts.UTC()}}, nil
}

func (e *Establishment) mustExist() error {
	if !e.Created {
		return fmt.Errorf("establishment %q: %w", e.Slug, ErrNotFound)
	}
	return nil
}

// oneDayWithoutEnd returns hours with no end_date on a one-day exception, as recorded before
// imports dropped an end_date equal to the start_date: the establishment holds, exports and
// compares them so.
func oneDayWithoutEnd(hours []SpecialHours) []SpecialHours {
	for i, sh := range hours {
		if sh.EndDate != nil && *sh.EndDate == sh.StartDate {
			hours = slices.Clone(hours)
			for j := i; j < len(hours); j++ {
				if hours[j].EndDate != nil && *hours[j].EndDate == hours[j].StartDate {
					hours[j].EndDate = nil
				}
			}
			return hours
		}
	}
	return hours
}
