package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// history runs commands in turn on the establishment built from the demo document, applying
// what each returns, and gives back the state and every event.
func history(tb testing.TB, commands ...func(*domain.Establishment) ([]domain.Event, error)) (*domain.Establishment, []domain.Event) {
	tb.Helper()
	res, err := importBody(tb, domain.New(demoSlug), readFile(tb, demoPath), testKey(1))
	if err != nil {
		tb.Fatal(err)
	}
	evs := res.Events
	est := domain.Rebuild(demoSlug, evs)
	for i, c := range commands {
		out, err := c(est)
		if err != nil {
			tb.Fatalf("command %d: %v", i, err)
		}
		for _, ev := range out {
			est.Apply(ev)
		}
		evs = append(evs, out...)
	}
	return est, evs
}

func TestRebuildFromEncodedEvents(t *testing.T) {
	t.Parallel()
	uploaded := domain.VersionInput{ID: "2027", Assets: []domain.AssetInput{{LanguageScope: "fr", URLs: []string{"https://cdn.example.fr/vins-2027.pdf"}}}}
	est, evs := history(t,
		func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(testKey(2)) },
		func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(false) },
		func(e *domain.Establishment) ([]domain.Event, error) { return e.PublishMenuVersion("vins", uploaded) },
		func(e *domain.Establishment) ([]domain.Event, error) {
			return e.WithdrawMenuVersion("menu-du-jour", "2026-11-22")
		},
		func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-23")) },
		func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() },
		func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(testKey(3)) },
	)
	var decoded []domain.Event
	for _, ev := range evs {
		b, err := domain.EncodeEvent(ev)
		if err != nil {
			t.Fatalf("EncodeEvent(%s): %v", ev.EventType(), err)
		}
		d, err := domain.DecodeEvent(ev.EventType(), domain.SchemaVersion, b)
		if err != nil {
			t.Fatalf("DecodeEvent(%s, %s): %v", ev.EventType(), b, err)
		}
		decoded = append(decoded, d)
	}
	got := domain.Rebuild(demoSlug, decoded)
	if diff := cmp.Diff(est, got, cmpOpts); diff != "" {
		t.Errorf("state rebuilt from decoded events mismatch (-want +got):\n%s", diff)
	}
	if got.APIKeyHash != testKey(3).Hash() || got.Today != mustDate(t, "2026-11-23") {
		t.Errorf("rebuilt state: got key hash %q, today %v", got.APIKeyHash, got.Today)
	}
}

func TestApplyIgnoresEventsForUnknownMenuTypes(t *testing.T) {
	t.Parallel()
	est, _ := history(t)
	want, _ := history(t)
	for _, ev := range []domain.Event{
		domain.MenuTypeRemoved{MenuType: "absent"},
		domain.MenuVersionPublished{MenuType: "absent", Version: domain.MenuVersion{ID: "v1"}},
		domain.MenuVersionWithdrawn{MenuType: "absent", Version: "v1"},
		domain.MenuVersionWithdrawn{MenuType: "vins", Version: "absent"},
		domain.WebhookRemoved{ID: "absent"},
	} {
		est.Apply(ev)
	}
	if diff := cmp.Diff(want, est, cmpOpts); diff != "" {
		t.Errorf("state mismatch (-want +got):\n%s", diff)
	}
}

func TestCommandsOnMissingEstablishment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(*domain.Establishment) ([]domain.Event, error)
	}{
		{"Activate", func(e *domain.Establishment) ([]domain.Event, error) { return e.Activate() }},
		{"EnableAPI", func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(testKey(1)) }},
		{"DisableAPI", func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }},
		{"RegenerateAPIKey", func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(testKey(1)) }},
		{"SetMenuRedirect", func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(true) }},
		{"PublishMenuVersion", func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("vins", domain.VersionInput{ID: "v1"})
		}},
		{"WithdrawMenuVersion", func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion("vins", "v1") }},
		{"StartDay", func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, err := tc.run(domain.New("inconnu"))
			if !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("got error %v, want ErrNotFound", err)
			}
			if len(evs) != 0 {
				t.Errorf("got events %v, want none", eventTypes(evs))
			}
		})
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	price := "11.00"
	aLaCarte := true
	id := int64(1)
	generated := domain.VersionInput{ID: "2026-11-24", ReferenceDate: ptr("2026-11-24"), Sections: []domain.SectionInput{{
		Name:  &domain.TextInput{FR: ptr("Plat")},
		Items: []domain.ItemInput{{ID: &id, Name: &domain.TextInput{FR: ptr("Pot-au-feu")}, ALaCarte: ptr(false)}},
	}}}
	wines := domain.VersionInput{ID: "2026", Assets: []domain.AssetInput{{LanguageScope: "fr_en", URLs: []string{
		"https://cdn.chez-marcel.example.fr/vins-1.pdf", "https://cdn.chez-marcel.example.fr/vins-2.pdf",
	}}}, Sections: []domain.SectionInput{}}
	withSections := wines
	withSections.Sections = []domain.SectionInput{{Name: &domain.TextInput{FR: ptr("Rouges")}}}
	badPrice := domain.VersionInput{ID: "automne-2026", Sections: []domain.SectionInput{{
		Name:  &domain.TextInput{FR: ptr("Entrées")},
		Items: []domain.ItemInput{{ID: &id, Name: &domain.TextInput{FR: ptr("Œuf")}, ALaCarte: &aLaCarte, Price: ptr("12.5")}},
	}}}
	goodPrice := badPrice
	goodPrice.Sections = []domain.SectionInput{{
		Name:  &domain.TextInput{FR: ptr("Entrées")},
		Items: []domain.ItemInput{{ID: &id, Name: &domain.TextInput{FR: ptr("Œuf")}, ALaCarte: &aLaCarte, Price: &price}},
	}}

	type command = func(*domain.Establishment) ([]domain.Event, error)
	tests := []struct {
		name       string
		setup      []command // run on the demo establishment first
		run        command
		wantTypes  []string
		wantErr    error    // matched with errors.Is
		wantFields []string // paths of the field errors
	}{
		{name: "activate an active establishment", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.Activate() }, wantTypes: []string{}},
		{name: "enable the api twice", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(testKey(2)) }, wantErr: domain.ErrInvalidTransition},
		{name: "disable the api", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }, wantTypes: []string{domain.TypePublicAPIDisabled}},
		{name: "disable a disabled api", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }, wantTypes: []string{}},
		{name: "enable after disable", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(testKey(2)) }, wantTypes: []string{domain.TypePublicAPIEnabled}},
		{name: "regenerate the key", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(testKey(2)) }, wantTypes: []string{domain.TypeAPIKeyRegenerated}},
		{name: "regenerate the key while disabled", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(testKey(2)) }, wantErr: domain.ErrAPIDisabled},
		{name: "menu redirect same value", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(true) }, wantTypes: []string{}},
		{name: "menu redirect off", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(false) }, wantTypes: []string{domain.TypeMenuRedirectChanged}},
		{name: "publish to an unknown menu type", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.PublishMenuVersion("brunch", wines) }, wantErr: domain.ErrMenuTypeNotFound},
		{name: "publish a new dated version", run: func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("menu-du-jour", generated)
		}, wantTypes: []string{domain.TypeMenuVersionPublished}},
		{name: "republish an identical version", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.PublishMenuVersion("vins", wines) }, wantTypes: []string{}},
		{name: "republish a changed version", run: func(e *domain.Establishment) ([]domain.Event, error) {
			changed := wines
			changed.Assets = []domain.AssetInput{{LanguageScope: "fr_en", URLs: []string{"https://cdn.chez-marcel.example.fr/vins.pdf"}}}
			return e.PublishMenuVersion("vins", changed)
		}, wantTypes: []string{domain.TypeMenuVersionPublished}},
		{name: "publish an uploaded version with sections", run: func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("vins", withSections)
		}, wantFields: []string{"sections"}},
		{name: "publish a dated version without reference date", run: func(e *domain.Establishment) ([]domain.Event, error) {
			v := generated
			v.ReferenceDate = nil
			return e.PublishMenuVersion("menu-du-jour", v)
		}, wantFields: []string{"reference_date"}},
		{name: "publish a bad price", run: func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("la-carte", badPrice)
		}, wantFields: []string{"sections[0].items[0].price"}},
		{name: "publish a good price", run: func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("la-carte", goodPrice)
		}, wantTypes: []string{domain.TypeMenuVersionPublished}},
		{name: "publish with a bad id", run: func(e *domain.Establishment) ([]domain.Event, error) {
			return e.PublishMenuVersion("vins", domain.VersionInput{ID: "V 1"})
		}, wantFields: []string{"id"}},
		{name: "withdraw a version", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion("vins", "2026") }, wantTypes: []string{domain.TypeMenuVersionWithdrawn}},
		{name: "withdraw an unknown version", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion("vins", "1999") }, wantErr: domain.ErrMenuVersionNotFound},
		{name: "withdraw from an unknown menu type", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion("brunch", "2026") }, wantErr: domain.ErrMenuTypeNotFound},
		{name: "start the first day", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }, wantTypes: []string{domain.TypeDayStarted}},
		{name: "start a later day", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-23")) }, wantTypes: []string{domain.TypeDayStarted}},
		{name: "start the same day", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }, wantTypes: []string{}},
		{name: "start an earlier day", setup: []command{func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-22")) }},
			run: func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, "2026-11-21")) }, wantTypes: []string{}},
		{name: "start the zero day", run: func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(domain.LocalDate{}) }, wantTypes: []string{}},
		{name: "prepare the next day", setup: []command{startDay(t, "2026-11-22")},
			run: prepareDay(t, "2026-11-23"), wantTypes: []string{domain.TypeDayAhead}},
		{name: "prepare a day before any", run: prepareDay(t, "2026-11-23"), wantTypes: []string{}},
		{name: "prepare the recorded day", setup: []command{startDay(t, "2026-11-23")},
			run: prepareDay(t, "2026-11-23"), wantTypes: []string{}},
		{name: "prepare a prepared day", setup: []command{startDay(t, "2026-11-22"), prepareDay(t, "2026-11-23")},
			run: prepareDay(t, "2026-11-23"), wantTypes: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			est, _ := history(t, tc.setup...)
			before, _ := history(t, tc.setup...)
			evs, err := tc.run(est)
			if diff := cmp.Diff(before, est, cmpOpts); diff != "" {
				t.Errorf("the command changed its receiver (-before +after):\n%s", diff)
			}
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("got error %v, want %v", err, tc.wantErr)
				}
			case tc.wantFields != nil:
				if diff := cmp.Diff(tc.wantFields, fieldPaths(err)); diff != "" {
					t.Errorf("field paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
				}
			case err != nil:
				t.Fatalf("got error %v, want none", err)
			}
			if err != nil {
				if len(evs) != 0 {
					t.Errorf("got events %v with an error, want none", eventTypes(evs))
				}
				return
			}
			if diff := cmp.Diff(tc.wantTypes, eventTypes(evs)); diff != "" {
				t.Errorf("event types mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func startDay(t *testing.T, date string) func(*domain.Establishment) ([]domain.Event, error) {
	return func(e *domain.Establishment) ([]domain.Event, error) { return e.StartDay(mustDate(t, date)) }
}

// prepareDay prepares date, starting at midnight in Paris in winter.
func prepareDay(t *testing.T, date string) func(*domain.Establishment) ([]domain.Event, error) {
	return func(e *domain.Establishment) ([]domain.Event, error) {
		d := mustDate(t, date)
		return e.PrepareDay(d, time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Add(-time.Hour))
	}
}

// TestDayAhead follows the day prepared ahead through the events that keep or clear it.
func TestDayAhead(t *testing.T) {
	t.Parallel()
	day := func(s string) domain.LocalDate { return mustDate(t, s) }
	starts := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		events    []domain.Event
		wantAhead domain.LocalDate
	}{
		{"prepared", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts}}, day("2026-11-23")},
		{"started", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts},
			domain.DayStarted{Date: day("2026-11-23")}}, domain.LocalDate{}},
		{"a later day started", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts},
			domain.DayStarted{Date: day("2026-11-25")}}, domain.LocalDate{}},
		{"an earlier day started", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts},
			domain.DayStarted{Date: day("2026-11-21")}}, day("2026-11-23")},
		{"not after the recorded day", []domain.Event{domain.DayStarted{Date: day("2026-11-23")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts}}, domain.LocalDate{}},
		{"another time zone", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts},
			domain.TimeZoneChanged{TimeZone: "America/Martinique"}}, domain.LocalDate{}},
		{"the same time zone", []domain.Event{domain.DayStarted{Date: day("2026-11-22")}, domain.DayAhead{Date: day("2026-11-23"), Starts: starts},
			domain.TimeZoneChanged{TimeZone: ""}}, day("2026-11-23")},
	}
	for _, tc := range tests {
		e := domain.Rebuild("chez-marcel", tc.events)
		if e.Ahead != tc.wantAhead {
			t.Errorf("%s: ahead %v, want %v", tc.name, e.Ahead, tc.wantAhead)
		}
		if want := !tc.wantAhead.IsZero(); !e.AheadStarts.IsZero() != want || want && !e.AheadStarts.Equal(starts) {
			t.Errorf("%s: ahead starts %v, want %v", tc.name, e.AheadStarts, tc.wantAhead)
		}
	}
}

func TestKeyEvents(t *testing.T) {
	t.Parallel()
	est, _ := history(t, func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() })
	key := testKey(5)
	evs, err := est.EnableAPI(key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]domain.Event{domain.PublicAPIEnabled{KeyHash: key.Hash()}}, evs); diff != "" {
		t.Errorf("EnableAPI mismatch (-want +got):\n%s", diff)
	}
	est.Apply(evs[0])
	next := testKey(6)
	evs, err = est.RegenerateAPIKey(next)
	if err != nil {
		t.Fatal(err)
	}
	est.Apply(evs[0])
	if est.APIKeyHash != next.Hash() {
		t.Errorf("APIKeyHash after regeneration: got %q, want %q", est.APIKeyHash, next.Hash())
	}
	evs, _ = est.DisableAPI()
	est.Apply(evs[0])
	if est.PublicAPIEnabled || est.APIKeyHash != "" {
		t.Errorf("after DisableAPI: got enabled %v, hash %q, want disabled and no hash", est.PublicAPIEnabled, est.APIKeyHash)
	}
}

func TestMenuTypeCurrent(t *testing.T) {
	t.Parallel()
	version := func(id, ref string) domain.MenuVersion {
		v := domain.MenuVersion{ID: domain.Slug(id)}
		if ref != "" {
			d := mustDate(t, ref)
			v.ReferenceDate = &d
		}
		return v
	}
	tests := []struct {
		name     string
		rotation domain.Rotation
		versions []domain.MenuVersion
		today    string // empty for an unknown day
		want     string // version id; empty for none
	}{
		{"no versions", domain.RotationNone, nil, "2026-11-22", ""},
		{"no rotation serves the last published", domain.RotationNone, []domain.MenuVersion{version("ete", "2026-06-01"), version("automne", ""), version("printemps", "2026-03-01")}, "2026-11-22", "printemps"},
		{"no rotation with today unknown", domain.RotationNone, []domain.MenuVersion{version("a", ""), version("b", "")}, "", "b"},
		{"empty rotation is none", "", []domain.MenuVersion{version("a", "2026-12-01"), version("b", "2026-01-01")}, "2026-11-22", "b"},
		{"daily exact date", domain.RotationDaily, []domain.MenuVersion{version("d21", "2026-11-21"), version("d22", "2026-11-22"), version("d23", "2026-11-23")}, "2026-11-22", "d22"},
		{"daily published out of order", domain.RotationDaily, []domain.MenuVersion{version("d22", "2026-11-22"), version("d20", "2026-11-20")}, "2026-11-22", "d22"},
		{"daily without a version today serves the latest past", domain.RotationDaily, []domain.MenuVersion{version("d18", "2026-11-18"), version("d20", "2026-11-20"), version("d19", "2026-11-19"), version("d25", "2026-11-25")}, "2026-11-22", "d20"},
		{"daily with only future versions", domain.RotationDaily, []domain.MenuVersion{version("d23", "2026-11-23"), version("d24", "2026-11-24")}, "2026-11-22", ""},
		{"daily with today unknown", domain.RotationDaily, []domain.MenuVersion{version("d22", "2026-11-22")}, "", ""},
		{"daily ignores undated versions", domain.RotationDaily, []domain.MenuVersion{version("d20", "2026-11-20"), version("undated", "")}, "2026-11-22", "d20"},
		{"weekly in the same ISO week", domain.RotationWeekly, []domain.MenuVersion{version("w47", "2026-11-16"), version("w46", "2026-11-09")}, "2026-11-22", "w47"},
		{"weekly across the year boundary", domain.RotationWeekly, []domain.MenuVersion{version("w52", "2026-12-21"), version("w53", "2026-12-28")}, "2027-01-03", "w53"},
		{"weekly new week starts on monday", domain.RotationWeekly, []domain.MenuVersion{version("w53", "2026-12-28")}, "2027-01-04", "w53"},
		{"weekly previous week serves the latest past", domain.RotationWeekly, []domain.MenuVersion{version("w45", "2026-11-02"), version("w46", "2026-11-09")}, "2026-11-22", "w46"},
		{"weekly holding beats a later past one", domain.RotationWeekly, []domain.MenuVersion{version("w47", "2026-11-16"), version("w46", "2026-11-15")}, "2026-11-22", "w47"},
		{"monthly same calendar month", domain.RotationMonthly, []domain.MenuVersion{version("nov", "2026-11-01"), version("oct", "2026-10-01")}, "2026-11-30", "nov"},
		{"monthly month before", domain.RotationMonthly, []domain.MenuVersion{version("oct", "2026-10-01"), version("sep", "2026-09-01")}, "2026-11-30", "oct"},
		{"monthly same month of another year", domain.RotationMonthly, []domain.MenuVersion{version("nov25", "2025-11-01")}, "2026-11-15", "nov25"},
		{"monthly across the year boundary", domain.RotationMonthly, []domain.MenuVersion{version("dec", "2026-12-01"), version("jan", "2027-01-01")}, "2027-01-10", "jan"},
		{"two holding versions: later reference date wins", domain.RotationWeekly, []domain.MenuVersion{version("thu", "2026-11-19"), version("mon", "2026-11-16")}, "2026-11-22", "thu"},
		{"two holding versions: tie goes to the later published", domain.RotationMonthly, []domain.MenuVersion{version("first", "2026-11-02"), version("second", "2026-11-02")}, "2026-11-22", "second"},
		{"two past versions: tie goes to the later published", domain.RotationDaily, []domain.MenuVersion{version("first", "2026-11-20"), version("second", "2026-11-20")}, "2026-11-22", "second"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt := domain.MenuType{MenuTypeAttrs: domain.MenuTypeAttrs{Slug: "menu", Rotation: tc.rotation}, Versions: tc.versions}
			var today domain.LocalDate
			if tc.today != "" {
				today = mustDate(t, tc.today)
			}
			got, ok := mt.Current(today)
			if ok != (tc.want != "") || string(got.ID) != tc.want {
				t.Errorf("Current(%v): got %q, %v, want %q", today, got.ID, ok, tc.want)
			}
		})
	}
}

func TestSpecialHoursComing(t *testing.T) {
	t.Parallel()
	exception := func(start, end string) domain.SpecialHours {
		s := domain.SpecialHours{StartDate: mustDate(t, start), Closed: true}
		if end != "" {
			d := mustDate(t, end)
			s.EndDate = &d
		}
		return s
	}
	christmas := exception("2026-12-24", "2026-12-26")
	newYear := exception("2027-01-01", "")
	summer := exception("2026-08-01", "2026-08-20")
	armistice := exception("2026-11-11", "")
	all := []domain.SpecialHours{christmas, newYear, summer, armistice}
	tests := []struct {
		name  string
		today string
		want  []domain.SpecialHours
	}{
		{"today unknown keeps all, sorted", "", []domain.SpecialHours{summer, armistice, christmas, newYear}},
		{"past exceptions dropped", "2026-11-22", []domain.SpecialHours{christmas, newYear}},
		{"one-day exception kept on its day", "2026-11-11", []domain.SpecialHours{armistice, christmas, newYear}},
		{"ongoing period kept", "2026-12-25", []domain.SpecialHours{christmas, newYear}},
		{"period kept on its last day", "2026-12-26", []domain.SpecialHours{christmas, newYear}},
		{"period dropped after its last day", "2026-12-27", []domain.SpecialHours{newYear}},
		{"everything past", "2027-01-02", []domain.SpecialHours{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			est := &domain.Establishment{SpecialHours: all}
			if tc.today != "" {
				est.Today = mustDate(t, tc.today)
			}
			got := est.SpecialHoursComing()
			if diff := cmp.Diff(tc.want, got, cmpOpts); diff != "" {
				t.Errorf("SpecialHoursComing mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDateDependent(t *testing.T) {
	t.Parallel()
	menuType := func(rotation domain.Rotation, web bool) domain.MenuType {
		return domain.MenuType{MenuTypeAttrs: domain.MenuTypeAttrs{Slug: "m", Rotation: rotation, WebDelivery: web}}
	}
	tests := []struct {
		name string
		est  domain.Establishment
		want bool
	}{
		{"nothing dated", domain.Establishment{MenuTypes: []domain.MenuType{menuType(domain.RotationNone, true)}}, false},
		{"special hours", domain.Establishment{SpecialHours: []domain.SpecialHours{{StartDate: mustDate(t, "2026-12-25"), Closed: true}}}, true},
		{"dated web menu", domain.Establishment{MenuTypes: []domain.MenuType{menuType(domain.RotationNone, true), menuType(domain.RotationDaily, true)}}, true},
		{"dated menu without web delivery", domain.Establishment{MenuTypes: []domain.MenuType{menuType(domain.RotationMonthly, false)}}, false},
		{"empty", domain.Establishment{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.est.DateDependent(); got != tc.want {
				t.Errorf("DateDependent(): got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLocalDateOfEstablishment(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	tests := []struct {
		name     string
		timeZone string
		want     string
	}{
		{"paris is ahead of UTC", "Europe/Paris", "2026-11-23"},
		{"montreal is behind UTC", "America/Montreal", "2026-11-22"},
		{"no time zone means paris", "", "2026-11-23"},
		{"unknown time zone means paris", "Mars/Olympus", "2026-11-23"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			est := &domain.Establishment{TimeZone: tc.timeZone}
			if got, want := est.LocalDate(now), mustDate(t, tc.want); got != want {
				t.Errorf("LocalDate(%v): got %v, want %v", now, got, want)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	var zero, one, other [32]byte
	one[31] = 1
	for i := range other {
		other[i] = 0xff
	}
	keys := []domain.APIKey{domain.NewAPIKey(zero), domain.NewAPIKey(one), domain.NewAPIKey(other)}
	seen := map[domain.APIKey]bool{}
	hashes := map[string]bool{}
	for _, k := range keys {
		if len(k) != 46 || k[:3] != "pk_" {
			t.Errorf("key %q: got length %d, want 46 starting with pk_", k, len(k))
		}
		for _, c := range k[3:] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Errorf("key %q: got character %q, want URL-safe base64", k, c)
			}
		}
		h := k.Hash()
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("Hash(%q): got %q, want 64 lower-case hex digits", k, h)
		}
		if h != k.Hash() {
			t.Errorf("Hash(%q): got two values", k)
		}
		seen[k], hashes[h] = true, true
	}
	if len(seen) != len(keys) || len(hashes) != len(keys) {
		t.Errorf("distinct random inputs: got %d keys and %d hashes, want %d of each", len(seen), len(hashes), len(keys))
	}
	if domain.NewAPIKey(one) != keys[1] {
		t.Errorf("NewAPIKey is not a function of its input")
	}
	// The SHA-256 of the empty string pins the hash function and encoding.
	if got, want := domain.APIKey("").Hash(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Hash(\"\"): got %s, want %s", got, want)
	}
}

// TestLocation checks the zone an establishment's dates are taken in: its own when the time zone
// database knows it, DefaultTimeZone otherwise (never the host's zone), the same zone however
// often it is asked for.
func TestLocation(t *testing.T) {
	instant := time.Date(2026, 7, 1, 21, 30, 0, 0, time.UTC)
	for _, tc := range []struct{ zone, want string }{
		{"America/New_York", "America/New_York"},
		{"Asia/Tokyo", "Asia/Tokyo"},
		{"UTC", "UTC"},
		{domain.DefaultTimeZone, domain.DefaultTimeZone},
		{"", domain.DefaultTimeZone},
		{"Local", domain.DefaultTimeZone},
		{"Nowhere/Else", domain.DefaultTimeZone},
		{"../etc/passwd", domain.DefaultTimeZone},
	} {
		want, err := time.LoadLocation(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		var first *time.Location
		for i := range 2 { // the second time from the cache
			e := domain.Establishment{TimeZone: tc.zone}
			got := e.Location()
			if i == 0 {
				first = got
			} else if got != first {
				t.Errorf("Location(%q): the zone is loaded again instead of kept", tc.zone)
			}
			if got.String() != tc.want || !instant.In(got).Equal(instant.In(want)) || instant.In(got).Format(time.DateTime) != instant.In(want).Format(time.DateTime) {
				t.Errorf("Location(%q) = %v, at %v reads %v; want %s, %v", tc.zone, got, instant, instant.In(got), tc.want, instant.In(want))
			}
		}
	}
}
