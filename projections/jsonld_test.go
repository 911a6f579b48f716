package projections

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
)

// jsonldOf renders the JSON-LD of e in French and decodes it.
func jsonldOf(t *testing.T, e *domain.Establishment) (map[string]any, string) {
	t.Helper()
	b := Render(e, 3)
	var doc map[string]any
	if err := json.Unmarshal(b.JSONLD.FR.Body, &doc); err != nil {
		t.Fatalf("JSON-LD %s: %v", b.JSONLD.FR.Body, err)
	}
	return doc, string(b.JSONLD.FR.Body)
}

func TestJSONLDTypes(t *testing.T) {
	for bt, want := range map[domain.BusinessType]string{
		"": "Restaurant", "restaurant": "Restaurant", "bar": "BarOrPub", "cafe": "CafeOrCoffeeShop", "bakery": "Bakery",
		"caterer": "FoodEstablishment", "wine_shop": "LiquorStore", "retail_store": "Store", "casino": "LocalBusiness",
	} {
		e := establishment(t, menuType("carte", domain.SourceUploaded, domain.MenuVersion{ID: "v"}))
		e.Identity.BusinessType, e.Identity.MenuURL = bt, ptr("https://example.fr/carte")
		doc, _ := jsonldOf(t, e)
		if doc["@type"] != want {
			t.Errorf("business type %q: @type %v, want %s", bt, doc["@type"], want)
		}
		// Only a FoodEstablishment has menus in schema.org: a shop's are works about it.
		_, hasMenu := doc["hasMenu"]
		_, subjectOf := doc["subjectOf"]
		_, menu := doc["menu"]
		food := schemaType(bt).food
		if hasMenu != food || menu != food || subjectOf == food {
			t.Errorf("business type %q: hasMenu %t, menu %t, subjectOf %t", bt, hasMenu, menu, subjectOf)
		}
	}
}

// Nothing is null or blank, a position needs both coordinates, and no text can close the script
// element a website pastes the document into.
func TestJSONLDLeavesOutWhatIsNotThere(t *testing.T) {
	e := establishment(t)
	e.Identity.Description = ptr("</script><script>alert(1)</script> & <!--")
	e.Identity.Email = ptr(" \u200b ") // blank: a zero-width space shows nothing
	e.Identity.Latitude = ptr(48.8)
	doc, body := jsonldOf(t, e)
	want := map[string]any{
		"@context": "https://schema.org", "@type": "Restaurant", "name": "Test",
		"description": "</script><script>alert(1)</script> & <!--",
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.ContainsAny(body, "<>&") || strings.Contains(body, "null") {
		t.Errorf("unescaped markup or a null in %s", body)
	}
}

func TestJSONLDHours(t *testing.T) {
	e := establishment(t)
	day := func(d domain.Weekday) *domain.Weekday { return &d }
	clock := func(s string) *domain.ClockTime {
		c, err := domain.ParseClockTime(s)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	e.Hours.Ranges = []domain.OpeningRange{
		{OpenDay: domain.Samedi, OpenTime: *clock("19:00"), CloseDay: day(domain.Dimanche), CloseTime: clock("01:00")},
		{OpenDay: domain.Lundi, OpenTime: *clock("19:00"), CloseTime: clock("23:00")},
		{OpenDay: domain.Lundi, OpenTime: *clock("12:00"), CloseTime: clock("14:00")},
		{OpenDay: domain.Mardi, OpenTime: *clock("12:00"), CloseTime: clock("14:00")},
		{OpenDay: domain.Mardi, OpenTime: *clock("12:00"), CloseTime: clock("14:00")}, // twice: one day
		{OpenDay: domain.Mercredi, OpenTime: *clock("00:00"), CloseDay: day(domain.Jeudi), CloseTime: clock("00:00")},
		{OpenDay: domain.Jeudi, OpenTime: *clock("18:00"), CloseDay: day(domain.Vendredi), CloseTime: clock("18:00")},
		{OpenDay: domain.Dimanche, OpenTime: *clock("10:00")},
	}
	e.SpecialHours = []domain.SpecialHours{
		{StartDate: fixture.Date(t, "2026-11-17"), Closed: true}, // over: left out
		{StartDate: fixture.Date(t, "2026-12-25"), Closed: true, OpenTime: clock("10:00")},
		{StartDate: fixture.Date(t, "2026-12-31"), EndDate: datePtr(t, "2027-01-01"), CloseTime: clock("02:00")},
		{StartDate: fixture.Date(t, "2027-01-02"), OpenTime: clock("00:00"), CloseTime: clock("00:00")}, // open all day
	}
	doc, _ := jsonldOf(t, e)
	spec := func(days []any, opens, closes string) map[string]any {
		m := map[string]any{"@type": "OpeningHoursSpecification", "dayOfWeek": days, "opens": opens}
		if closes != "" {
			m["closes"] = closes
		}
		return m
	}
	days := func(names ...string) []any {
		var out []any
		for _, n := range names {
			out = append(out, "https://schema.org/"+n)
		}
		return out
	}
	want := []any{
		spec(days("Monday", "Tuesday"), "12:00", "14:00"), // a day with two ranges has two entries
		spec(days("Monday"), "19:00", "23:00"),
		spec(days("Wednesday"), "00:00", "23:59"), // the whole day, not a closure
		spec(days("Thursday"), "18:00", "00:00"),  // 24 hours: to midnight,
		spec(days("Friday"), "00:00", "18:00"),    // then from midnight
		spec(days("Saturday"), "19:00", "01:00"),  // after midnight: closes before it opens
		spec(days("Sunday"), "10:00", ""),         // no closing time
	}
	if diff := cmp.Diff(want, doc["openingHoursSpecification"]); diff != "" {
		t.Errorf("regular hours (-want +got):\n%s", diff)
	}
	wantSpecial := []any{
		map[string]any{"@type": "OpeningHoursSpecification", "validFrom": "2026-12-25", "validThrough": "2026-12-25", "opens": "00:00", "closes": "00:00"},
		map[string]any{"@type": "OpeningHoursSpecification", "validFrom": "2026-12-31", "validThrough": "2027-01-01", "closes": "02:00"},
		map[string]any{"@type": "OpeningHoursSpecification", "validFrom": "2027-01-02", "validThrough": "2027-01-02", "opens": "00:00", "closes": "23:59"},
	}
	if diff := cmp.Diff(wantSpecial, doc["specialOpeningHoursSpecification"]); diff != "" {
		t.Errorf("special hours (-want +got):\n%s", diff)
	}
}

// A menu in English falls back to French field by field; a price is a number with its two
// decimals; the diets are schema.org's; the file is the one /r/menus gives in the language.
func TestJSONLDMenus(t *testing.T) {
	price := domain.Price("12.50")
	v := domain.MenuVersion{ID: "v", ReferenceDate: datePtr(t, "2026-11-18"),
		Assets: []domain.Asset{{LanguageScope: domain.ScopeFR, URLs: []string{"https://f.example/fr.pdf"}}, {LanguageScope: domain.ScopeFREN, URLs: []string{"https://f.example/both.pdf"}}},
		Sections: []domain.Section{{Name: domain.Text{FR: "Plats", EN: "Mains"}, Items: []domain.Item{{
			ID: 1, Name: domain.Text{FR: "Velouté"}, Description: &domain.Text{FR: "Potimarron", EN: "Pumpkin"}, Price: &price, ALaCarte: true,
			GlutenFree: true, Vegetarian: true, Vegan: true,
		}}}},
	}
	mt := menuType("du-jour", domain.SourceGenerated, v)
	mt.Rotation = domain.RotationDaily
	b := Render(establishment(t, mt), 3)
	body := string(b.JSONLD.EN.Body)
	want := `"hasMenu":[{"@type":"Menu","name":"du-jour","inLanguage":"en","temporalCoverage":"2026-11-18","url":"https://f.example/both.pdf",` +
		`"hasMenuSection":[{"@type":"MenuSection","name":"Mains","hasMenuItem":[{"@type":"MenuItem","name":"Velouté","description":"Pumpkin",` +
		`"offers":{"@type":"Offer","price":12.50,"priceCurrency":"EUR"},` +
		`"suitableForDiet":["https://schema.org/GlutenFreeDiet","https://schema.org/VegetarianDiet","https://schema.org/VeganDiet"]}]}]}]}`
	if !strings.HasSuffix(body, want) {
		t.Errorf("English menu:\n got %s\nwant …%s", body, want)
	}
	if fr := string(b.JSONLD.FR.Body); !strings.Contains(fr, `"inLanguage":"fr","temporalCoverage":"2026-11-18","url":"https://f.example/fr.pdf"`) {
		t.Errorf("French menu: %s", fr)
	}
}
