package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// The parser tables are package variables: the fuzz targets are seeded from them.

var slugCases = []struct {
	name string
	in   string
	ok   bool
}{
	{"valid", "chez-marcel", true},
	{"one letter", "a", true},
	{"one digit", "7", true},
	{"letters and digits", "menu2026-v3", true},
	{"inner double hyphen", "a--b", true},
	{"64 characters", strings.Repeat("a", 64), true},
	{"65 characters", strings.Repeat("a", 65), false},
	{"empty", "", false},
	{"uppercase", "Chez-Marcel", false},
	{"dot", "chez.marcel", false},
	{"leading hyphen", "-chez", false},
	{"trailing hyphen", "chez-", false},
	{"only a hyphen", "-", false},
	{"underscore", "chez_marcel", false},
	{"space", "chez marcel", false},
	{"unicode letter", "café", false},
	{"trailing newline", "chez\n", false},
	{"NATS wildcard", "chez*", false},
}

func TestParseSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range slugCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParseSlug(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseSlug(%q): got error %v, want ok %v", tc.in, err, tc.ok)
			}
			if tc.ok && got.String() != tc.in {
				t.Errorf("ParseSlug(%q): got %q, want %q", tc.in, got, tc.in)
			}
			if !tc.ok && got != "" {
				t.Errorf("ParseSlug(%q): got %q with an error, want the zero slug", tc.in, got)
			}
		})
	}
}

var dateCases = []struct {
	name string
	in   string
	want domain.LocalDate // zero when the input is refused
}{
	{"valid", "2026-01-05", domain.LocalDate{Year: 2026, Month: time.January, Day: 5}},
	{"leap day of a leap year", "2028-02-29", domain.LocalDate{Year: 2028, Month: time.February, Day: 29}},
	{"last day of the year", "2026-12-31", domain.LocalDate{Year: 2026, Month: time.December, Day: 31}},
	{"lowest year", "1900-01-01", domain.LocalDate{Year: 1900, Month: time.January, Day: 1}},
	{"highest year", "2999-12-31", domain.LocalDate{Year: 2999, Month: time.December, Day: 31}},
	{"leap day of a common year", "2026-02-29", domain.LocalDate{}},
	{"day 30 of february", "2026-02-30", domain.LocalDate{}},
	{"april 31", "2026-04-31", domain.LocalDate{}},
	{"one-digit month", "2026-1-05", domain.LocalDate{}},
	{"two-digit year", "26-01-05", domain.LocalDate{}},
	{"month 13", "2026-13-01", domain.LocalDate{}},
	{"month 0", "2026-00-10", domain.LocalDate{}},
	{"day 0", "2026-01-00", domain.LocalDate{}},
	{"with a time", "2026-01-05T10:00:00Z", domain.LocalDate{}},
	{"with a trailing space", "2026-01-05 ", domain.LocalDate{}},
	{"slashes", "2026/01/05", domain.LocalDate{}},
	{"signed year", "+026-01-05", domain.LocalDate{}},
	{"year before 1900", "1899-12-31", domain.LocalDate{}},
	{"year after 2999", "3000-01-01", domain.LocalDate{}},
	{"empty", "", domain.LocalDate{}},
}

func TestParseLocalDate(t *testing.T) {
	t.Parallel()
	for _, tc := range dateCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParseLocalDate(tc.in)
			if ok := !tc.want.IsZero(); (err == nil) != ok {
				t.Fatalf("ParseLocalDate(%q): got error %v, want ok %v", tc.in, err, ok)
			}
			if got != tc.want {
				t.Errorf("ParseLocalDate(%q): got %#v, want %#v", tc.in, got, tc.want)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("ParseLocalDate(%q).String(): got %q, want the input", tc.in, got.String())
			}
		})
	}
}

func TestLocalDateCalendar(t *testing.T) {
	t.Parallel()
	d := mustDate(t, "2026-12-31")
	if got, want := d.AddDays(1), mustDate(t, "2027-01-01"); got != want {
		t.Errorf("AddDays(1): got %v, want %v", got, want)
	}
	if got, want := mustDate(t, "2028-03-01").AddDays(-1), mustDate(t, "2028-02-29"); got != want {
		t.Errorf("AddDays(-1): got %v, want %v", got, want)
	}
	if !d.Before(d.AddDays(1)) || d.Before(d) || d.AddDays(1).Before(d) {
		t.Errorf("Before: got a wrong order around %v", d)
	}
	paris := (&domain.Establishment{TimeZone: "Europe/Paris"}).Location()
	if got, want := mustDate(t, "2026-11-25").StartIn(paris), time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("StartIn(Paris): got %v, want %v", got, want)
	}
	if got := (domain.LocalDate{}).String(); got != "" {
		t.Errorf("zero String(): got %q, want empty", got)
	}
	if got, want := domain.DateOf(time.Date(2026, 3, 29, 23, 30, 0, 0, time.UTC)), mustDate(t, "2026-03-29"); got != want {
		t.Errorf("DateOf: got %v, want %v", got, want)
	}
	for _, in := range []string{"2026-07-14", ""} {
		var got domain.LocalDate
		if err := got.UnmarshalText([]byte(in)); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", in, err)
		}
		b, _ := got.MarshalText()
		if string(b) != in {
			t.Errorf("MarshalText after UnmarshalText(%q): got %q, want the input", in, b)
		}
	}
	var bad domain.LocalDate
	if err := bad.UnmarshalText([]byte("2026-02-30")); err == nil {
		t.Errorf("UnmarshalText(2026-02-30): got no error, want one")
	}
}

var clockCases = []struct {
	name    string
	in      string
	minutes int // -1 when the input is refused
}{
	{"midnight", "00:00", 0},
	{"morning", "07:30", 450},
	{"last minute", "23:59", 1439},
	{"noon", "12:00", 720},
	{"hour 24", "24:00", -1},
	{"hour 25", "25:00", -1},
	{"one-digit hour", "7:30", -1},
	{"minute 60", "07:60", -1},
	{"h separator", "07h30", -1},
	{"one-digit minute", "07:3", -1},
	{"three-digit minute", "07:300", -1},
	{"signed hour", "+7:30", -1},
	{"with seconds", "07:30:00", -1},
	{"empty", "", -1},
}

func TestParseClockTime(t *testing.T) {
	t.Parallel()
	for _, tc := range clockCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParseClockTime(tc.in)
			if ok := tc.minutes >= 0; (err == nil) != ok {
				t.Fatalf("ParseClockTime(%q): got error %v, want ok %v", tc.in, err, ok)
			}
			if err != nil {
				return
			}
			if got.Minutes() != tc.minutes {
				t.Errorf("ParseClockTime(%q).Minutes(): got %d, want %d", tc.in, got.Minutes(), tc.minutes)
			}
			if got.String() != tc.in {
				t.Errorf("ParseClockTime(%q).String(): got %q, want the input", tc.in, got.String())
			}
		})
	}
}

var priceCases = []struct {
	name string
	in   string
	ok   bool
}{
	{"two decimals", "12.50", true},
	{"zero", "0.00", true},
	{"below one", "0.50", true},
	{"largest", "999999999.99", true},
	{"one decimal", "12.5", false},
	{"no decimals", "12", false},
	{"three decimals", "12.505", false},
	{"negative", "-1.00", false},
	{"leading zero", "012.00", false},
	{"exponent", "1e3", false},
	{"comma", "12,50", false},
	{"plus sign", "+1.00", false},
	{"leading space", " 1.00", false},
	{"trailing newline", "1.00\n", false},
	{"ten integer digits", "1000000000.00", false},
	{"missing integer part", ".50", false},
	{"empty", "", false},
}

func TestParsePrice(t *testing.T) {
	t.Parallel()
	for _, tc := range priceCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParsePrice(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParsePrice(%q): got error %v, want ok %v", tc.in, err, tc.ok)
			}
			if tc.ok && string(got) != tc.in {
				t.Errorf("ParsePrice(%q): got %q, want the input", tc.in, got)
			}
		})
	}
}

func TestParseWeekday(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want domain.Weekday // 0 when the input is refused
	}{
		{"lundi", "lundi", domain.Lundi},
		{"mardi", "mardi", domain.Mardi},
		{"mercredi", "mercredi", domain.Mercredi},
		{"jeudi", "jeudi", domain.Jeudi},
		{"vendredi", "vendredi", domain.Vendredi},
		{"samedi", "samedi", domain.Samedi},
		{"dimanche", "dimanche", domain.Dimanche},
		{"capitalised", "Lundi", 0},
		{"english", "monday", 0},
		{"abbreviated", "lun", 0},
		{"empty", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParseWeekday(tc.in)
			if ok := tc.want != 0; (err == nil) != ok {
				t.Fatalf("ParseWeekday(%q): got error %v, want ok %v", tc.in, err, ok)
			}
			if got != tc.want {
				t.Errorf("ParseWeekday(%q): got %d, want %d", tc.in, got, tc.want)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("ParseWeekday(%q).String(): got %q, want the input", tc.in, got.String())
			}
		})
	}
}

func TestWeekdayText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		day  domain.Weekday
		text string
	}{
		{"zero", 0, ""},
		{"lundi", domain.Lundi, "lundi"},
		{"dimanche", domain.Dimanche, "dimanche"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := tc.day.MarshalText()
			if err != nil || string(b) != tc.text {
				t.Fatalf("MarshalText(%d): got %q, %v, want %q", tc.day, b, err, tc.text)
			}
			var got domain.Weekday
			if err := got.UnmarshalText(b); err != nil || got != tc.day {
				t.Errorf("UnmarshalText(%q): got %d, %v, want %d", b, got, err, tc.day)
			}
		})
	}
	if got := domain.Weekday(8).String(); got != "" {
		t.Errorf("Weekday(8).String(): got %q, want empty", got)
	}
	var d domain.Weekday
	if err := d.UnmarshalText([]byte("funday")); err == nil {
		t.Errorf("UnmarshalText(funday): got no error, want one")
	}
}

func TestClosedLists(t *testing.T) {
	t.Parallel()
	businessType := func(s string) (string, error) { v, err := domain.ParseBusinessType(s); return string(v), err }
	menuKind := func(s string) (string, error) { v, err := domain.ParseMenuKind(s); return string(v), err }
	menuSource := func(s string) (string, error) { v, err := domain.ParseMenuSource(s); return string(v), err }
	scope := func(s string) (string, error) { v, err := domain.ParseLanguageScope(s); return string(v), err }
	rotation := func(s string) (string, error) { v, err := domain.ParseRotation(s); return string(v), err }
	status := func(s string) (string, error) { v, err := domain.ParseStatus(s); return string(v), err }

	tests := []struct {
		name  string
		parse func(string) (string, error)
		in    string
		want  string // empty when the input is refused
	}{
		{"business type restaurant", businessType, "restaurant", "restaurant"},
		{"business type wine_shop", businessType, "wine_shop", "wine_shop"},
		{"business type bar", businessType, "bar", "bar"},
		{"business type cafe", businessType, "cafe", "cafe"},
		{"business type bakery", businessType, "bakery", "bakery"},
		{"business type caterer", businessType, "caterer", "caterer"},
		{"business type retail_store", businessType, "retail_store", "retail_store"},
		{"business type default", businessType, "", "restaurant"},
		{"business type capitalised", businessType, "Restaurant", ""},
		{"business type unknown", businessType, "nightclub", ""},
		{"menu kind menu", menuKind, "menu", "menu"},
		{"menu kind card", menuKind, "card", "card"},
		{"menu kind empty", menuKind, "", ""},
		{"menu kind french", menuKind, "carte", ""},
		{"menu source generated", menuSource, "generated", "generated"},
		{"menu source uploaded", menuSource, "uploaded", "uploaded"},
		{"menu source empty", menuSource, "", ""},
		{"menu source unknown", menuSource, "pdf", ""},
		{"language scope fr", scope, "fr", "fr"},
		{"language scope en", scope, "en", "en"},
		{"language scope fr_en", scope, "fr_en", "fr_en"},
		{"language scope de", scope, "de", ""},
		{"language scope reversed", scope, "en_fr", ""},
		{"language scope empty", scope, "", ""},
		{"rotation none", rotation, "none", "none"},
		{"rotation daily", rotation, "daily", "daily"},
		{"rotation weekly", rotation, "weekly", "weekly"},
		{"rotation monthly", rotation, "monthly", "monthly"},
		{"rotation default", rotation, "", "none"},
		{"rotation unknown", rotation, "yearly", ""},
		{"status draft", status, "draft", "draft"},
		{"status active", status, "active", "active"},
		{"status default", status, "", "draft"},
		{"status unknown", status, "archived", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.parse(tc.in)
			if ok := tc.want != ""; (err == nil) != ok {
				t.Fatalf("parse(%q): got error %v, want ok %v", tc.in, err, ok)
			}
			if err == nil && got != tc.want {
				t.Errorf("parse(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRotationDated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rotation domain.Rotation
		want     bool
	}{
		{"", false},
		{domain.RotationNone, false},
		{domain.RotationDaily, true},
		{domain.RotationWeekly, true},
		{domain.RotationMonthly, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.rotation), func(t *testing.T) {
			t.Parallel()
			if got := tc.rotation.Dated(); got != tc.want {
				t.Errorf("Rotation(%q).Dated(): got %v, want %v", tc.rotation, got, tc.want)
			}
		})
	}
}

var localeCases = []struct {
	name string
	in   string
	want domain.Locale
}{
	{"english", "en", domain.LocaleEN},
	{"french", "fr", domain.LocaleFR},
	{"german", "de", domain.LocaleFR},
	{"spanish", "es", domain.LocaleFR},
	{"absent", "", domain.LocaleFR},
	{"upper case english", "EN", domain.LocaleFR},
	{"english region", "en-GB", domain.LocaleFR},
}

func TestParseLocale(t *testing.T) {
	t.Parallel()
	for _, tc := range localeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := domain.ParseLocale(tc.in); got != tc.want {
				t.Errorf("ParseLocale(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTextIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   domain.Text
		locale domain.Locale
		want   string
	}{
		{"french", domain.Text{FR: "Entrées", EN: "Starters"}, domain.LocaleFR, "Entrées"},
		{"english", domain.Text{FR: "Entrées", EN: "Starters"}, domain.LocaleEN, "Starters"},
		{"english falls back to french", domain.Text{FR: "Entrées"}, domain.LocaleEN, "Entrées"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.text.In(tc.locale); got != tc.want {
				t.Errorf("In(%q): got %q, want %q", tc.locale, got, tc.want)
			}
		})
	}
}

func TestAssetCovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope  domain.LanguageScope
		locale domain.Locale
		want   bool
	}{
		{domain.ScopeFR, domain.LocaleFR, true},
		{domain.ScopeFR, domain.LocaleEN, false},
		{domain.ScopeEN, domain.LocaleEN, true},
		{domain.ScopeEN, domain.LocaleFR, false},
		{domain.ScopeFREN, domain.LocaleFR, true},
		{domain.ScopeFREN, domain.LocaleEN, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.scope)+" "+string(tc.locale), func(t *testing.T) {
			t.Parallel()
			if got := (domain.Asset{LanguageScope: tc.scope}).Covers(tc.locale); got != tc.want {
				t.Errorf("Covers: got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		okHTTP    bool // ValidateURL
		okHTTPS   bool // ValidateHTTPSURL
		reasonHas string
	}{
		{"https", "https://example.fr/carte.pdf", true, true, ""},
		{"https with port and query", "https://example.fr:8443/hook?x=1", true, true, ""},
		{"upper-case scheme", "HTTPS://EXAMPLE.FR/hook", true, true, ""},
		{"http", "http://example.fr/carte", true, false, "https is required"},
		{"ftp", "ftp://example.fr/carte.pdf", false, false, ""},
		{"javascript", "javascript:alert(1)", false, false, ""},
		{"relative path", "/carte.pdf", false, false, ""},
		{"no scheme", "example.fr/carte.pdf", false, false, ""},
		{"scheme-relative", "//example.fr/carte.pdf", false, false, ""},
		{"no host", "https://", false, false, ""},
		{"no host with a path", "https:///carte.pdf", false, false, ""},
		{"user info", "https://user:secret@example.fr/", false, false, ""},
		{"user name only", "https://user@example.fr/", false, false, ""},
		{"space in path", "https://example.fr/la carte.pdf", false, false, ""},
		{"space in host", "https://exa mple.fr/", false, false, ""},
		{"tab", "https://example.fr/\tcarte", false, false, ""},
		{"newline", "https://example.fr/carte\n", false, false, ""},
		{"empty", "", false, false, ""},
		{"too long", "https://example.fr/" + strings.Repeat("a", 2048), false, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := domain.ValidateURL(tc.in); (err == nil) != tc.okHTTP {
				t.Errorf("ValidateURL(%q): got error %v, want ok %v", tc.in, err, tc.okHTTP)
			}
			err := domain.ValidateHTTPSURL(tc.in)
			if (err == nil) != tc.okHTTPS {
				t.Errorf("ValidateHTTPSURL(%q): got error %v, want ok %v", tc.in, err, tc.okHTTPS)
			}
			if tc.reasonHas != "" && (err == nil || !strings.Contains(err.Error(), tc.reasonHas)) {
				t.Errorf("ValidateHTTPSURL(%q): got error %v, want one saying %q", tc.in, err, tc.reasonHas)
			}
		})
	}
}

func TestValidatePhone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"french number", "+33142000000", true},
		{"seven digits", "+1234567", true},
		{"fifteen digits", "+123456789012345", true},
		{"national format", "0142000000", false},
		{"no plus sign", "33142000000", false},
		{"leading zero after plus", "+0142000000", false},
		{"spaces", "+33 1 42 00 00 00", false},
		{"dots", "+33.1.42.00.00.00", false},
		{"six digits", "+123456", false},
		{"sixteen digits", "+1234567890123456", false},
		{"plus only", "+", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := domain.ValidatePhone(tc.in); (err == nil) != tc.ok {
				t.Errorf("ValidatePhone(%q): got error %v, want ok %v", tc.in, err, tc.ok)
			}
		})
	}
}

func TestValidateEmail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "bonjour@example.fr", true},
		{"dots and plus", "marcel.dupont+carte@mail.example.fr", true},
		{"no at sign", "bonjour", false},
		{"no domain", "bonjour@", false},
		{"no local part", "@example.fr", false},
		{"display name", "Marcel <marcel@example.fr>", false},
		{"angle brackets", "<marcel@example.fr>", false},
		{"trailing space", "marcel@example.fr ", false},
		{"two addresses", "a@example.fr, b@example.fr", false},
		{"too long", strings.Repeat("a", 64) + "@" + strings.Repeat("b", 190) + ".fr", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := domain.ValidateEmail(tc.in); (err == nil) != tc.ok {
				t.Errorf("ValidateEmail(%q): got error %v, want ok %v", tc.in, err, tc.ok)
			}
		})
	}
}

// mustDate parses a YYYY-MM-DD date of a test table.
func mustDate(tb testing.TB, s string) domain.LocalDate {
	tb.Helper()
	d, err := domain.ParseLocalDate(s)
	if err != nil {
		tb.Fatalf("ParseLocalDate(%q): %v", s, err)
	}
	return d
}

// mustClock parses an HH:MM time of a test table.
func mustClock(tb testing.TB, s string) domain.ClockTime {
	tb.Helper()
	c, err := domain.ParseClockTime(s)
	if err != nil {
		tb.Fatalf("ParseClockTime(%q): %v", s, err)
	}
	return c
}

// cmpOpts compares domain values: ClockTime keeps its minutes unexported.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b domain.ClockTime) bool { return a == b }),
}

func TestRotationPeriod(t *testing.T) {
	date := func(s string) domain.LocalDate {
		d, err := domain.ParseLocalDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		rotation    domain.Rotation
		day         string
		first, last string
	}{
		{domain.RotationDaily, "2026-11-22", "2026-11-22", "2026-11-22"},
		{domain.RotationWeekly, "2026-11-22", "2026-11-16", "2026-11-22"},  // a Sunday: the week that ends
		{domain.RotationWeekly, "2026-11-16", "2026-11-16", "2026-11-22"},  // a Monday: the week that starts
		{domain.RotationWeekly, "2027-01-01", "2026-12-28", "2027-01-03"},  // across the year
		{domain.RotationMonthly, "2028-02-10", "2028-02-01", "2028-02-29"}, // a leap February
		{domain.RotationMonthly, "2026-12-31", "2026-12-01", "2026-12-31"},
	} {
		first, last, ok := tc.rotation.Period(date(tc.day))
		if !ok || first.String() != tc.first || last.String() != tc.last {
			t.Errorf("%s period of %s: got %s to %s (%t), want %s to %s", tc.rotation, tc.day, first, last, ok, tc.first, tc.last)
		}
	}
	if _, _, ok := domain.RotationNone.Period(date("2026-11-22")); ok {
		t.Error("a menu without rotation has a period")
	}
}
