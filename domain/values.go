package domain

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Slug names an establishment or a menu type. It is a NATS subject token and a KV key part, so
// the accepted alphabet is narrow: lower-case letters, digits and inner hyphens, 1 to 64 bytes.
type Slug string

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// ParseSlug validates s as a slug.
func ParseSlug(s string) (Slug, error) {
	if !slugPattern.MatchString(s) {
		return "", fmt.Errorf("invalid slug %q: want 1 to 64 characters a-z, 0-9 and inner hyphens", s)
	}
	return Slug(s), nil
}

func (s Slug) String() string { return string(s) }

// LocalDate is a calendar date without a time zone. The zero value means absent.
type LocalDate struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseLocalDate validates s as a YYYY-MM-DD calendar date.
func ParseLocalDate(s string) (LocalDate, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return LocalDate{}, fmt.Errorf("invalid date %q: want YYYY-MM-DD", s)
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Year() < 1900 || t.Year() > 2999 {
		return LocalDate{}, fmt.Errorf("invalid date %q: want a calendar date YYYY-MM-DD", s)
	}
	return DateOf(t), nil
}

// DateOf returns the calendar date of t in t's location.
func DateOf(t time.Time) LocalDate {
	y, m, d := t.Date()
	return LocalDate{y, m, d}
}

// IsZero reports whether d is absent.
func (d LocalDate) IsZero() bool { return d == LocalDate{} }

func (d LocalDate) String() string {
	if d.IsZero() {
		return ""
	}
	if d.Year < 0 || d.Year > 9999 || d.Month < 0 || d.Month > 99 || d.Day < 0 || d.Day > 99 {
		return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
	}
	// Every document with a date writes it: by hand, as the Sprintf above would.
	b := [10]byte{'0' + byte(d.Year/1000), '0' + byte(d.Year/100%10), '0' + byte(d.Year/10%10), '0' + byte(d.Year%10), '-',
		'0' + byte(d.Month/10%10), '0' + byte(d.Month%10), '-', '0' + byte(d.Day/10%10), '0' + byte(d.Day%10)}
	return string(b[:])
}

// Time returns midnight UTC of d, for calendar arithmetic.
func (d LocalDate) Time() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// StartIn returns the instant d starts in loc: its midnight there, as time.Date gives it.
func (d LocalDate) StartIn(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// Before reports whether d is strictly before o.
func (d LocalDate) Before(o LocalDate) bool { return d.Time().Before(o.Time()) }

// AddDays returns d moved by n days.
func (d LocalDate) AddDays(n int) LocalDate { return DateOf(d.Time().AddDate(0, 0, n)) }

// MarshalText encodes d as YYYY-MM-DD.
func (d LocalDate) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes YYYY-MM-DD; the empty string is the zero date.
func (d *LocalDate) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = LocalDate{}
		return nil
	}
	v, err := ParseLocalDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ClockTime is a time of day, HH:MM in 24 hours. It is stored as minutes after midnight.
type ClockTime struct{ minutes int }

// ParseClockTime validates s as HH:MM, 00:00 to 23:59.
func ParseClockTime(s string) (ClockTime, error) {
	if len(s) != 5 || s[2] != ':' || !isDigits(s[:2]) || !isDigits(s[3:]) {
		return ClockTime{}, fmt.Errorf("invalid time %q: want HH:MM", s)
	}
	h, _ := strconv.Atoi(s[:2])
	m, _ := strconv.Atoi(s[3:])
	if h > 23 || m > 59 {
		return ClockTime{}, fmt.Errorf("invalid time %q: want 00:00 to 23:59", s)
	}
	return ClockTime{h*60 + m}, nil
}

// Minutes returns the minutes after midnight.
func (c ClockTime) Minutes() int { return c.minutes }

func (c ClockTime) String() string {
	h, m := c.minutes/60, c.minutes%60
	if h < 0 || h > 99 || m < 0 {
		return fmt.Sprintf("%02d:%02d", h, m)
	}
	b := [5]byte{'0' + byte(h/10), '0' + byte(h%10), ':', '0' + byte(m/10), '0' + byte(m%10)}
	return string(b[:])
}

// MarshalText encodes c as HH:MM.
func (c ClockTime) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes HH:MM.
func (c *ClockTime) UnmarshalText(b []byte) error {
	v, err := ParseClockTime(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Price is a non-negative decimal amount with exactly two decimals, kept as its canonical text
// ("12.50") so that it is never rounded through a float.
type Price string

var pricePattern = regexp.MustCompile(`^(?:0|[1-9][0-9]{0,8})\.[0-9]{2}$`)

// ParsePrice validates s as a price with two decimals such as "12.50".
func ParsePrice(s string) (Price, error) {
	if !pricePattern.MatchString(s) {
		return "", fmt.Errorf("invalid price %q: want a non-negative amount with two decimals such as \"12.50\"", s)
	}
	return Price(s), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Weekday is a day of the week, named in French on the wire.
type Weekday int

// The days in display order: lundi first.
const (
	Lundi Weekday = iota + 1
	Mardi
	Mercredi
	Jeudi
	Vendredi
	Samedi
	Dimanche
)

var weekdayNames = [...]string{"", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"}

// ParseWeekday validates a French day name (lower case).
func ParseWeekday(s string) (Weekday, error) {
	for i, n := range weekdayNames {
		if i > 0 && n == s {
			return Weekday(i), nil
		}
	}
	return 0, fmt.Errorf("invalid day %q: want lundi, mardi, mercredi, jeudi, vendredi, samedi or dimanche", s)
}

func (d Weekday) String() string {
	if d < Lundi || d > Dimanche {
		return ""
	}
	return weekdayNames[d]
}

// MarshalText encodes d as its French name.
func (d Weekday) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes a French day name; the empty string is the zero day, which is what
// MarshalText writes for it.
func (d *Weekday) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = 0
		return nil
	}
	v, err := ParseWeekday(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// closedList is the shared shape of the small closed enumerations.
func parseClosed(kind, s string, allowed []string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q: want one of %s", kind, s, strings.Join(allowed, ", "))
}

// BusinessType is the closed list of establishment kinds.
type BusinessType string

// BusinessTypes lists every accepted business type; restaurant is the default.
var BusinessTypes = []string{"restaurant", "wine_shop", "bar", "cafe", "bakery", "caterer", "retail_store"}

// ParseBusinessType validates s; the empty string means the default, restaurant.
func ParseBusinessType(s string) (BusinessType, error) {
	if s == "" {
		return "restaurant", nil
	}
	return BusinessType(s), parseClosed("business_type", s, BusinessTypes)
}

// MenuKind is menu (a composed offer) or card (an a la carte list).
type MenuKind string

// MenuKinds lists every menu kind.
var MenuKinds = []string{"menu", "card"}

// ParseMenuKind validates s.
func ParseMenuKind(s string) (MenuKind, error) {
	return MenuKind(s), parseClosed("kind", s, MenuKinds)
}

// MenuSource is generated (structured sections and items) or uploaded (files only).
type MenuSource string

// The menu sources.
const (
	SourceGenerated MenuSource = "generated"
	SourceUploaded  MenuSource = "uploaded"
)

// MenuSources lists every menu source.
var MenuSources = []string{string(SourceGenerated), string(SourceUploaded)}

// ParseMenuSource validates s.
func ParseMenuSource(s string) (MenuSource, error) {
	return MenuSource(s), parseClosed("source", s, MenuSources)
}

// LanguageScope says which language a menu file covers.
type LanguageScope string

// The language scopes.
const (
	ScopeFR   LanguageScope = "fr"
	ScopeEN   LanguageScope = "en"
	ScopeFREN LanguageScope = "fr_en"
)

// LanguageScopes lists every language scope.
var LanguageScopes = []string{string(ScopeFR), string(ScopeEN), string(ScopeFREN)}

// ParseLanguageScope validates s.
func ParseLanguageScope(s string) (LanguageScope, error) {
	return LanguageScope(s), parseClosed("language_scope", s, LanguageScopes)
}

// Rotation is how a menu type's versions follow the calendar.
type Rotation string

// The rotations. RotationNone serves the latest published version.
const (
	RotationNone    Rotation = "none"
	RotationDaily   Rotation = "daily"
	RotationWeekly  Rotation = "weekly"
	RotationMonthly Rotation = "monthly"
)

// Rotations lists every rotation; none is the default.
var Rotations = []string{string(RotationNone), string(RotationDaily), string(RotationWeekly), string(RotationMonthly)}

// ParseRotation validates s; the empty string means none.
func ParseRotation(s string) (Rotation, error) {
	if s == "" {
		return RotationNone, nil
	}
	return Rotation(s), parseClosed("rotation", s, Rotations)
}

// Dated reports whether versions are chosen by date.
func (r Rotation) Dated() bool { return r != RotationNone && r != "" }

// Period returns the first and last days of the rotation period that contains d: d itself for
// daily, its ISO week (Monday to Sunday) for weekly, its month for monthly. It reports false for a
// rotation that is not dated.
func (r Rotation) Period(d LocalDate) (first, last LocalDate, ok bool) {
	switch r {
	case RotationDaily:
		return d, d, true
	case RotationWeekly:
		first = d.AddDays(-((int(d.Time().Weekday()) + 6) % 7)) // back to Monday
		return first, first.AddDays(6), true
	case RotationMonthly:
		first = LocalDate{d.Year, d.Month, 1}
		return first, DateOf(first.Time().AddDate(0, 1, -1)), true
	}
	return LocalDate{}, LocalDate{}, false
}

// Status is the activation status of an establishment.
type Status string

// The statuses. The spec shows no transition out of active.
const (
	StatusDraft  Status = "draft"
	StatusActive Status = "active"
)

// Statuses lists every status; draft is the default.
var Statuses = []string{string(StatusDraft), string(StatusActive)}

// ParseStatus validates s; the empty string means draft.
func ParseStatus(s string) (Status, error) {
	if s == "" {
		return StatusDraft, nil
	}
	return Status(s), parseClosed("status", s, Statuses)
}

// Locale is a requested menu language.
type Locale string

// The locales. Anything else is read as French.
const (
	LocaleFR Locale = "fr"
	LocaleEN Locale = "en"
)

// ParseLocale maps a query value to a locale: en is English, everything else French. It never
// fails, as the spec requires.
func ParseLocale(s string) Locale {
	if s == "en" {
		return LocaleEN
	}
	return LocaleFR
}

const maxURLLength = 2048

// ValidateURL checks that s is an absolute http or https URL with a host.
func ValidateURL(s string) error {
	if len(s) > maxURLLength {
		return fmt.Errorf("url longer than %d bytes", maxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return fmt.Errorf("invalid url %q: want an absolute http or https url", s)
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("invalid url %q: contains whitespace", s)
	}
	return nil
}

// ValidateHTTPSURL checks that s is an absolute https URL with a host.
func ValidateHTTPSURL(s string) error {
	if err := ValidateURL(s); err != nil {
		return err
	}
	// ValidateURL parsed s already; the scheme is case-insensitive.
	if u, _ := url.Parse(s); u.Scheme != "https" {
		return fmt.Errorf("invalid url %q: https is required", s)
	}
	return nil
}

var phonePattern = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// ValidatePhone checks an international (E.164) phone number such as +33142000000.
func ValidatePhone(s string) error {
	if !phonePattern.MatchString(s) {
		return fmt.Errorf("invalid phone number %q: want a plus sign followed by 7 to 15 digits", s)
	}
	return nil
}

// ValidateEmail checks a bare e-mail address (no display name).
func ValidateEmail(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return fmt.Errorf("invalid e-mail address %q", s)
	}
	return nil
}

// validateText checks a free text value: valid UTF-8, no control characters other than line
// breaks and tabs (C1 controls included), no explicit bidirectional formatting characters (which
// can make text display other than it reads), and at most max runes.
func validateText(s string, max int) error { return scanText(s, max, false) }

// validateLine checks a one-line text, such as a name: validateText, and no line break or tab.
func validateLine(s string, max int) error { return scanText(s, max, true) }

// scanText makes the checks of validateText, and of validateLine when line is set, in one reading
// of s (every text of every event is checked again when the log is replayed), reporting the first
// of them that fails in this order: UTF-8, length, the first control or bidirectional formatting
// character, a line break or a tab.
func scanText(s string, max int, line bool) error {
	var (
		runes int
		bad   rune = -1 // the first control or bidirectional formatting character
		brk   bool
	)
	for i := 0; i < len(s); {
		runes++
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch {
			case c == '\n' || c == '\t' || c == '\r':
				brk = true
			case (c < 0x20 || c == 0x7f) && bad < 0:
				bad = rune(c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("not valid UTF-8")
		}
		i += size
		if bad < 0 && (r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069) {
			bad = r
		}
	}
	switch {
	case runes > max:
		return fmt.Errorf("longer than %d characters", max)
	case bad >= 0 && (bad < 0x20 || bad >= 0x7f && bad <= 0x9f):
		return fmt.Errorf("contains a control character")
	case bad >= 0:
		return fmt.Errorf("contains a bidirectional formatting character (U+%04X)", bad)
	case line && brk:
		return fmt.Errorf("contains a line break or a tab")
	}
	return nil
}

// Blank reports whether s shows nothing: only white space and invisible formatting characters
// such as a zero-width space or a byte order mark.
func Blank(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) })
}

// ValidateLine checks a one-line text of at most max characters, such as a name: valid UTF-8, no
// control character, line break, tab or bidirectional formatting character.
func ValidateLine(s string, max int) error { return validateLine(s, max) }

// CheckSlugs adds to fe an error for each of slugs, a list named field, that is not a slug or is
// listed before it.
func CheckSlugs(field string, slugs []string, fe *FieldErrorList) {
	seen := make(map[string]bool, len(slugs))
	for i, s := range slugs {
		if _, err := ParseSlug(s); err != nil {
			fe.add(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		} else if seen[s] {
			fe.add(fmt.Sprintf("%s[%d]", field, i), "%q is listed twice", s)
		}
		seen[s] = true
	}
}
