package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// sampleEvents holds one filled-in value of every event type, with its wire type string. The
// strings are written out: they never change when a Go name does.
func sampleEvents(tb testing.TB) []struct {
	wire  string
	event domain.Event
} {
	tb.Helper()
	str := func(s string) *string { return &s }
	f64 := func(f float64) *float64 { return &f }
	day := func(d domain.Weekday) *domain.Weekday { return &d }
	clock := func(s string) *domain.ClockTime { c := mustClock(tb, s); return &c }
	date := func(s string) *domain.LocalDate { d := mustDate(tb, s); return &d }
	price := domain.Price("12.50")
	return []struct {
		wire  string
		event domain.Event
	}{
		{"establishment.created", domain.EstablishmentCreated{Slug: "chez-marcel", TimeZone: "Europe/Paris"}},
		{"establishment.identity_changed", domain.IdentityChanged{Identity: domain.Identity{
			Name: "Chez Marcel", Description: str("Bistrot"), BusinessType: "restaurant",
			PublicCategory: str("Bistrot"), WebsiteURL: str("https://example.fr"), Email: str("a@example.fr"),
			PhoneNumber: str("+33142000000"), Latitude: f64(48.8799), Longitude: f64(-2.5),
		}}},
		{"establishment.timezone_changed", domain.TimeZoneChanged{TimeZone: "America/Montreal"}},
		{"establishment.hours_changed", domain.HoursChanged{Hours: domain.Hours{
			Summary: str("Du mardi au samedi"),
			Ranges: []domain.OpeningRange{
				{OpenDay: domain.Vendredi, OpenTime: mustClock(tb, "19:00"), CloseDay: day(domain.Samedi), CloseTime: clock("00:30")},
				{OpenDay: domain.Samedi, OpenTime: mustClock(tb, "12:00")},
			},
		}}},
		{"establishment.special_hours_changed", domain.SpecialHoursChanged{SpecialHours: []domain.SpecialHours{
			{StartDate: mustDate(tb, "2026-12-25"), EndDate: date("2026-12-26"), Closed: true},
			{StartDate: mustDate(tb, "2026-12-24"), OpenTime: clock("19:00"), CloseTime: clock("23:00")},
		}}},
		{"establishment.master_menu_changed", domain.MasterMenuChanged{URL: str("https://example.fr/carte.pdf")}},
		{"establishment.activated", domain.Activated{}},
		{"public_api.enabled", domain.PublicAPIEnabled{KeyHash: strings.Repeat("ab", 32)}},
		{"public_api.disabled", domain.PublicAPIDisabled{}},
		{"api_key.regenerated", domain.APIKeyRegenerated{KeyHash: strings.Repeat("cd", 32)}},
		{"menu_redirect.changed", domain.MenuRedirectChanged{Enabled: true}},
		{"menu_type.defined", domain.MenuTypeDefined{MenuType: domain.MenuTypeAttrs{
			Slug: "la-carte", Name: "La carte", Kind: "card", Source: domain.SourceGenerated,
			WebDelivery: true, Rotation: domain.RotationWeekly, Position: 2,
		}}},
		{"menu_type.removed", domain.MenuTypeRemoved{MenuType: "vins"}},
		{"menu_version.published", domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{
			ID: "automne", ReferenceDate: date("2026-09-22"),
			Assets: []domain.Asset{{LanguageScope: domain.ScopeFREN, URLs: []string{"https://example.fr/1.jpg", "https://example.fr/2.jpg"}}},
			Sections: []domain.Section{{Name: domain.Text{FR: "Entrées", EN: "Starters"}, Position: 1, Items: []domain.Item{
				{ID: 101, Name: domain.Text{FR: "Œuf parfait"}, Description: &domain.Text{FR: "Cèpes", EN: "Porcini"}, Price: &price, ALaCarte: true, GlutenFree: true, ChefRecommendation: true},
				{ID: 102, Name: domain.Text{FR: "Velouté"}, Vegetarian: true, Vegan: true},
			}}},
		}}},
		{"menu_version.withdrawn", domain.MenuVersionWithdrawn{MenuType: "la-carte", Version: "ete"}},
		{"webhook_endpoint.registered", domain.WebhookRegistered{Endpoint: domain.WebhookEndpoint{ID: "wh_1", URL: "https://hooks.example.fr/x"}}},
		{"webhook_endpoint.removed", domain.WebhookRemoved{ID: "wh_1"}},
		{"day.started", domain.DayStarted{Date: mustDate(tb, "2026-11-22")}},
		{"day.ahead", domain.DayAhead{Date: mustDate(tb, "2026-11-23"), Starts: time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)}},
	}
}

func TestEventWireTypes(t *testing.T) {
	t.Parallel()
	for _, s := range sampleEvents(t) {
		t.Run(s.wire, func(t *testing.T) {
			t.Parallel()
			if got := s.event.EventType(); got != s.wire {
				t.Errorf("EventType(): got %q, want %q", got, s.wire)
			}
		})
	}
}

func TestEncodeDecodeEvent(t *testing.T) {
	t.Parallel()
	for _, s := range sampleEvents(t) {
		t.Run(s.wire, func(t *testing.T) {
			t.Parallel()
			b, err := domain.EncodeEvent(s.event)
			if err != nil {
				t.Fatalf("EncodeEvent: %v", err)
			}
			got, err := domain.DecodeEvent(s.wire, domain.SchemaVersion, b)
			if err != nil {
				t.Fatalf("DecodeEvent(%s): %v", b, err)
			}
			if diff := cmp.Diff(s.event, got, cmpOpts); diff != "" {
				t.Errorf("DecodeEvent(EncodeEvent(e)) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeEventWireFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		event domain.Event
		want  string
	}{
		{"dates and times as text", domain.SpecialHoursChanged{SpecialHours: []domain.SpecialHours{{
			StartDate: mustDate(t, "2026-12-24"), OpenTime: ptr(mustClock(t, "19:00")),
		}}}, `{"special_hours":[{"start_date":"2026-12-24","end_date":null,"open_time":"19:00","close_time":null,"closed":false}]}`},
		{"days in french", domain.HoursChanged{Hours: domain.Hours{Ranges: []domain.OpeningRange{{
			OpenDay: domain.Dimanche, OpenTime: mustClock(t, "09:05"),
		}}}}, `{"hours":{"business_hours_summary":null,"business_hours":[{"open_day":"dimanche","open_time":"09:05","close_day":null,"close_time":null}]}}`},
		{"day", domain.DayStarted{Date: mustDate(t, "2027-01-01")}, `{"date":"2027-01-01"}`},
		{"day ahead", domain.DayAhead{Date: mustDate(t, "2027-01-01"), Starts: time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
			`{"date":"2027-01-01","starts":"2026-12-31T23:00:00Z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.EncodeEvent(tc.event)
			if err != nil {
				t.Fatalf("EncodeEvent: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("EncodeEvent: got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     string
		schema  int
		payload string
	}{
		{"unknown type", "establishment.archived", domain.SchemaVersion, `{}`},
		{"empty type", "", domain.SchemaVersion, `{}`},
		{"future schema", domain.TypeActivated, domain.SchemaVersion + 1, `{}`},
		{"schema zero", domain.TypeActivated, 0, `{}`},
		{"not JSON", domain.TypeDayStarted, domain.SchemaVersion, `{"date":`},
		{"empty payload", domain.TypeDayStarted, domain.SchemaVersion, ``},
		{"wrong type", domain.TypeMenuRedirectChanged, domain.SchemaVersion, `{"enabled":"yes"}`},
		{"invalid date", domain.TypeDayStarted, domain.SchemaVersion, `{"date":"2026-02-30"}`},
		{"day ahead without its instant", domain.TypeDayAhead, domain.SchemaVersion, `{"date":"2026-02-28"}`},
		{"day ahead with an invalid instant", domain.TypeDayAhead, domain.SchemaVersion, `{"date":"2026-02-28","starts":"tomorrow"}`},
		{"invalid time", domain.TypeHoursChanged, domain.SchemaVersion, `{"hours":{"business_hours":[{"open_day":"lundi","open_time":"24:00"}]}}`},
		{"invalid day", domain.TypeHoursChanged, domain.SchemaVersion, `{"hours":{"business_hours":[{"open_day":"monday","open_time":"10:00"}]}}`},
		{"payload is an array", domain.TypeActivated, domain.SchemaVersion, `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.DecodeEvent(tc.typ, tc.schema, []byte(tc.payload))
			if err == nil {
				t.Fatalf("DecodeEvent(%q, %d, %s): got %#v, want an error", tc.typ, tc.schema, tc.payload, got)
			}
			if got != nil {
				t.Errorf("DecodeEvent with an error: got event %#v, want nil", got)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
