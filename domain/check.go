package domain

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// CheckEvent applies to an event read back from the log the checks its values passed when a
// command made it: whoever could append to the log without going through the commands (a
// stolen NATS credential, a bug) cannot get a value served that the admin API would refuse, such
// as a redirect to a javascript: URL or a key hash of the wrong form. An event that fails is
// skipped by its readers, never applied.
func CheckEvent(ev Event) error {
	var fe FieldErrorList
	switch ev := ev.(type) {
	case EstablishmentCreated:
		// Its slug is not read: the establishment is the one its record names.
		checkTimeZone("timezone", ev.TimeZone, &fe)
	case IdentityChanged:
		checkIdentity(ev.Identity, &fe)
	case TimeZoneChanged:
		checkTimeZone("timezone", ev.TimeZone, &fe)
	case HoursChanged:
		checkOptText("hours.business_hours_summary", ev.Hours.Summary, maxDescription, &fe)
		for i, r := range ev.Hours.Ranges {
			p := fmt.Sprintf("hours.business_hours[%d]", i)
			checkWeekday(p+".open_day", r.OpenDay, &fe)
			if r.CloseDay != nil {
				checkWeekday(p+".close_day", *r.CloseDay, &fe)
			}
		}
	case SpecialHoursChanged:
		for i, s := range ev.SpecialHours {
			if s.StartDate.IsZero() {
				fe.add(fmt.Sprintf("special_hours[%d].start_date", i), "required")
			}
		}
	case MasterMenuChanged:
		if ev.URL != nil {
			if err := ValidateFileRef(*ev.URL); err != nil {
				fe.add("url", "%v", err)
			}
		}
	case PublicAPIEnabled:
		checkKeyHash(ev.KeyHash, &fe)
	case APIKeyRegenerated:
		checkKeyHash(ev.KeyHash, &fe)
	case MenuTypeDefined:
		checkMenuTypeAttrs("menu_type", ev.MenuType, &fe)
	case MenuTypeRemoved:
		checkSlug("menu_type", ev.MenuType, &fe)
	case MenuVersionPublished:
		checkSlug("menu_type", ev.MenuType, &fe)
		checkVersion("version", ev.Version, &fe)
	case MenuVersionWithdrawn:
		checkSlug("menu_type", ev.MenuType, &fe)
		checkSlug("version", ev.Version, &fe)
	case DayStarted:
		if ev.Date.IsZero() {
			fe.add("date", "required")
		}
	case DayAhead:
		if ev.Date.IsZero() {
			fe.add("date", "required")
		}
		if ev.Starts.IsZero() {
			fe.add("starts", "required")
		}
	case Activated, PublicAPIDisabled, MenuRedirectChanged, WebhookRegistered, WebhookRemoved:
		// Nothing in them is served as it is written.
	default:
		fe.add("type", "unknown event %T", ev)
	}
	return fe.Err()
}

// keyHashLength is the length of an API key's hash: SHA-256 in lowercase hexadecimal.
const keyHashLength = 64

func checkKeyHash(h string, fe *FieldErrorList) {
	ok := len(h) == keyHashLength
	for i := 0; ok && i < len(h); i++ {
		ok = h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f'
	}
	if !ok {
		fe.add("key_hash", "want %d lowercase hexadecimal digits", keyHashLength)
	}
}

func checkSlug(field string, s Slug, fe *FieldErrorList) {
	if _, err := ParseSlug(string(s)); err != nil {
		fe.add(field, "%v", err)
	}
}

// zones holds the time zones loaded by name: loading one reads the time zone database, too slow
// for every event of a replay or every command. Only names LoadLocation accepts enter it, and at
// most maxZones of them (the database has about 600; "Europe//Paris" would be another name of
// one). A *time.Location is safe for concurrent use. A zone kept is the database's as the
// process first read it: an update of the host's database is seen after a restart.
var (
	zones     sync.Map // name → *time.Location
	zoneCount atomic.Int32
)

const maxZones = 4096

// loadZone is time.LoadLocation for the names an establishment may have: "" and "Local", which
// LoadLocation reads as UTC and as the host's zone, are not zones of the database.
func loadZone(name string) (*time.Location, bool) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), true
	}
	if name == "" || name == "Local" {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	// A place is taken before the zone is stored and given back unless it was, so that the count
	// never passes maxZones, however many load at once.
	if zoneCount.Add(1) > maxZones {
		zoneCount.Add(-1)
		return loc, true
	}
	actual, loaded := zones.LoadOrStore(name, loc)
	if loaded {
		zoneCount.Add(-1)
	}
	return actual.(*time.Location), true
}

func checkTimeZone(field, tz string, fe *FieldErrorList) {
	if _, ok := loadZone(tz); !ok {
		fe.add(field, "unknown IANA time zone %q", tz)
	}
}

func checkWeekday(field string, d Weekday, fe *FieldErrorList) {
	if d < Lundi || d > Dimanche {
		fe.add(field, "not a day of the week")
	}
}

func checkOptText(field string, s *string, max int, fe *FieldErrorList) {
	if s != nil {
		if err := validateText(*s, max); err != nil {
			fe.add(field, "%v", err)
		}
	}
}

func checkOptURL(field string, s *string, fe *FieldErrorList) {
	if s != nil {
		if err := ValidateURL(*s); err != nil {
			fe.add(field, "%v", err)
		}
	}
}

func checkName(field, s string, fe *FieldErrorList) {
	if Blank(s) {
		fe.add(field, "required")
	} else if err := validateLine(s, maxName); err != nil {
		fe.add(field, "%v", err)
	}
}

func checkIdentity(id Identity, fe *FieldErrorList) {
	checkName("identity.name", id.Name, fe)
	checkOptText("identity.description", id.Description, maxDescription, fe)
	checkOptText("identity.public_category", id.PublicCategory, maxShort, fe)
	checkOptText("identity.address", id.Address, maxShort, fe)
	checkOptURL("identity.website_url", id.WebsiteURL, fe)
	checkOptURL("identity.menu_url", id.MenuURL, fe)
	checkOptURL("identity.logo_url", id.LogoURL, fe)
	if _, err := ParseBusinessType(string(id.BusinessType)); err != nil {
		fe.add("identity.business_type", "%v", err)
	}
	if id.Email != nil {
		if err := ValidateEmail(*id.Email); err != nil {
			fe.add("identity.email", "%v", err)
		}
	}
	if id.PhoneNumber != nil {
		if err := ValidatePhone(*id.PhoneNumber); err != nil {
			fe.add("identity.phone_number", "%v", err)
		}
	}
	if l := id.Latitude; l != nil && (math.IsNaN(*l) || *l < -90 || *l > 90) {
		fe.add("identity.latitude", "want a number from -90 to 90")
	}
	if l := id.Longitude; l != nil && (math.IsNaN(*l) || *l < -180 || *l > 180) {
		fe.add("identity.longitude", "want a number from -180 to 180")
	}
}

func checkMenuTypeAttrs(p string, a MenuTypeAttrs, fe *FieldErrorList) {
	checkSlug(p+".slug", a.Slug, fe)
	checkName(p+".name", a.Name, fe)
	if _, err := ParseMenuKind(string(a.Kind)); err != nil {
		fe.add(p+".kind", "%v", err)
	}
	if _, err := ParseMenuSource(string(a.Source)); err != nil {
		fe.add(p+".source", "%v", err)
	}
	if _, err := ParseRotation(string(a.Rotation)); err != nil {
		fe.add(p+".rotation", "%v", err)
	}
}

func checkVersion(p string, v MenuVersion, fe *FieldErrorList) {
	checkSlug(p+".id", v.ID, fe)
	if len(v.Assets) > maxAssets {
		fe.add(p+".assets", "more than %d files", maxAssets)
	}
	for i, a := range v.Assets {
		ap := fmt.Sprintf("%s.assets[%d]", p, i)
		if _, err := ParseLanguageScope(string(a.LanguageScope)); err != nil {
			fe.add(ap+".language_scope", "%v", err)
		}
		if len(a.URLs) == 0 || len(a.URLs) > maxPages {
			fe.add(ap+".urls", "want 1 to %d pages", maxPages)
		}
		for k, u := range a.URLs {
			if err := ValidateFileRef(u); err != nil {
				fe.add(fmt.Sprintf("%s.urls[%d]", ap, k), "%v", err)
			}
		}
	}
	if len(v.Sections) > maxSections {
		fe.add(p+".sections", "more than %d sections", maxSections)
	}
	for i, s := range v.Sections {
		// The paths of a section and of its items are written only for the one that fails: a
		// replay checks every item of every menu of the log.
		sp := func() string { return fmt.Sprintf("%s.sections[%d]", p, i) }
		if !textValid(s.Name, validateLine, maxName) {
			checkText(sp()+".name", s.Name, validateLine, maxName, fe)
		}
		if len(s.Items) > maxItems {
			fe.add(sp()+".items", "more than %d items", maxItems)
		}
		for j, it := range s.Items {
			if itemValid(it) {
				continue
			}
			ip := fmt.Sprintf("%s.items[%d]", sp(), j)
			if it.ID <= 0 {
				fe.add(ip+".id", "want a positive integer")
			}
			checkText(ip+".name", it.Name, validateLine, maxName, fe)
			if it.Description != nil {
				checkText(ip+".description", *it.Description, validateText, maxDescription, fe)
			}
			if it.Price != nil {
				if _, err := ParsePrice(string(*it.Price)); err != nil {
					fe.add(ip+".price", "%v", err)
				}
			}
		}
	}
}

// itemValid reports whether the checks checkVersion makes of it pass.
func itemValid(it Item) bool {
	if it.ID <= 0 || !textValid(it.Name, validateLine, maxName) {
		return false
	}
	if it.Description != nil && !textValid(*it.Description, validateText, maxDescription) {
		return false
	}
	if it.Price != nil {
		if _, err := ParsePrice(string(*it.Price)); err != nil {
			return false
		}
	}
	return true
}

// textValid reports whether checkText finds nothing wrong with t.
func textValid(t Text, check func(string, int) error, max int) bool {
	return !Blank(t.FR) && check(t.FR, max) == nil && (t.EN == "" || check(t.EN, max) == nil)
}

func checkText(p string, t Text, check func(string, int) error, max int, fe *FieldErrorList) {
	if Blank(t.FR) {
		fe.add(p+".fr", "required")
	} else if err := check(t.FR, max); err != nil {
		fe.add(p+".fr", "%v", err)
	}
	if t.EN != "" {
		if err := check(t.EN, max); err != nil {
			fe.add(p+".en", "%v", err)
		}
	}
}
