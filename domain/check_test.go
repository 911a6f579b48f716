package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
)

// TestCheckEvent: every event a command makes passes; one holding a value the admin API refuses
// fails, naming the field.
func TestCheckEvent(t *testing.T) {
	for _, c := range sampleEvents(t) {
		if err := domain.CheckEvent(c.event); err != nil {
			t.Errorf("%s: %v", c.wire, err)
		}
	}
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		event domain.Event
		field string
	}{
		{domain.MasterMenuChanged{URL: str("javascript:alert(1)")}, "url"},
		{domain.MasterMenuChanged{URL: str("https://example.fr/a b.pdf")}, "url"},
		{domain.MasterMenuChanged{URL: str("sha256:00")}, "url"},
		{domain.APIKeyRegenerated{KeyHash: "attacker"}, "key_hash"},
		{domain.PublicAPIEnabled{KeyHash: strings.Repeat("AB", 32)}, "key_hash"},
		{domain.PublicAPIEnabled{}, "key_hash"},
		{domain.EstablishmentCreated{Slug: "x", TimeZone: "Mars/Olympus"}, "timezone"},
		{domain.TimeZoneChanged{TimeZone: "Local"}, "timezone"},
		{domain.IdentityChanged{Identity: domain.Identity{Name: "X", BusinessType: "restaurant", LogoURL: str("data:image/png;base64,AA")}}, "identity.logo_url"},
		{domain.IdentityChanged{Identity: domain.Identity{Name: "X\u202e", BusinessType: "restaurant"}}, "identity.name"},
		{domain.IdentityChanged{Identity: domain.Identity{Name: "X", BusinessType: "casino"}}, "identity.business_type"},
		{domain.IdentityChanged{Identity: domain.Identity{Name: "X", BusinessType: "restaurant", Email: str("a@b.c <x@y.z>")}}, "identity.email"},
		{domain.HoursChanged{Hours: domain.Hours{Ranges: []domain.OpeningRange{{OpenDay: 9}}}}, "hours.business_hours[0].open_day"},
		{domain.MenuTypeDefined{MenuType: domain.MenuTypeAttrs{Slug: "../x", Name: "X", Kind: "card", Source: "generated", Rotation: "none"}}, "menu_type.slug"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Assets: []domain.Asset{{LanguageScope: domain.ScopeFR, URLs: []string{"javascript:alert(1)"}}}}}, "version.assets[0].urls[0]"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}, Items: []domain.Item{{ID: 1, Name: domain.Text{FR: "\x00"}}}}}}}, "version.sections[0].items[0].name.fr"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}}, {Name: domain.Text{FR: "Vins", EN: "Wines\n"}}}}}, "version.sections[1].name.en"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}}, {Name: domain.Text{FR: "Vins"}, Items: []domain.Item{
				{ID: 1, Name: domain.Text{FR: "Margaux"}, Price: ptr(domain.Price("12.50"))},
				{ID: 2, Name: domain.Text{FR: "Pomerol"}, Price: ptr(domain.Price("12,50"))},
			}}}}}, "version.sections[1].items[1].price"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}, Items: []domain.Item{
				{ID: 1, Name: domain.Text{FR: "Tarte"}, Description: &domain.Text{FR: "ok", EN: "\u202e"}},
			}}}}}, "version.sections[0].items[0].description.en"},
		{domain.MenuVersionPublished{MenuType: "la-carte", Version: domain.MenuVersion{ID: "v1",
			Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}, Items: []domain.Item{{ID: 0, Name: domain.Text{FR: "Tarte"}}}}}}}, "version.sections[0].items[0].id"},
		{domain.MenuVersionWithdrawn{MenuType: "la-carte", Version: "A"}, "version"},
		{domain.DayStarted{}, "date"},
		{domain.DayAhead{Starts: time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)}, "date"},
		{domain.DayAhead{Date: domain.LocalDate{Year: 2026, Month: 11, Day: 23}}, "starts"},
	} {
		err := domain.CheckEvent(c.event)
		fields := domain.FieldErrors(err)
		if len(fields) == 0 || fields[0].Field != c.field {
			t.Errorf("%T %+v: got %v, want an error on %s", c.event, c.event, err, c.field)
		}
	}
}
