package projections

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

func datePtr(tb testing.TB, s string) *domain.LocalDate {
	d := fixture.Date(tb, s)
	return &d
}

// establishment returns an active establishment holding menu types, on 2026-11-18.
func establishment(tb testing.TB, types ...domain.MenuType) *domain.Establishment {
	tb.Helper()
	for i := range types {
		types[i].Position = i
	}
	return &domain.Establishment{
		Slug:      "test",
		Created:   true,
		Status:    domain.StatusActive,
		Identity:  domain.Identity{Name: "Test", BusinessType: "restaurant"},
		MenuTypes: types,
		Today:     fixture.Date(tb, "2026-11-18"),
	}
}

// menuType returns an undated menu type with web delivery serving version v.
func menuType(slug string, source domain.MenuSource, v domain.MenuVersion) domain.MenuType {
	return domain.MenuType{
		MenuTypeAttrs: domain.MenuTypeAttrs{Slug: domain.Slug(slug), Name: slug, Kind: "card", Source: source, WebDelivery: true, Rotation: domain.RotationNone},
		Versions:      []domain.MenuVersion{v},
	}
}

// detailDoc is a decoded menu detail document.
type detailDoc struct {
	Revision      int64       `json:"content_revision"`
	MenuType      menuTypeDoc `json:"menu_type"`
	ReferenceDate *string     `json:"reference_date"`
	Assets        []assetDoc  `json:"assets"`
	Sections      []struct {
		Name     string `json:"name"`
		Position int    `json:"position"`
		Items    []struct {
			ID          int64   `json:"id"`
			Name        string  `json:"name"`
			Description *string `json:"description"`
			Price       *string `json:"price"`
		} `json:"items"`
	} `json:"sections"`
}

type menuTypeDoc struct {
	Slug string `json:"slug"`
}

type assetDoc struct {
	LanguageScope string   `json:"language_scope"`
	URLs          []string `json:"urls"`
}

type listDoc struct {
	Menus []struct {
		MenuType menuTypeDoc `json:"menu_type"`
		Assets   []assetDoc  `json:"assets"`
	} `json:"menus"`
}

func decode[T any](tb testing.TB, d dockey.Document) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(d.Body, &v); err != nil {
		tb.Fatalf("decode %s: %v", d.Body, err)
	}
	return v
}

func TestLocaleFallbackFieldByField(t *testing.T) {
	type texts struct{ Section, Item, Description string }
	tests := []struct {
		name    string
		section domain.Text
		item    domain.Text
		desc    domain.Text
		wantFR  texts
		wantEN  texts
	}{
		{
			name:    "all translated",
			section: domain.Text{FR: "Entrées", EN: "Starters"},
			item:    domain.Text{FR: "Soupe", EN: "Soup"},
			desc:    domain.Text{FR: "Maison", EN: "Homemade"},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Starters", "Soup", "Homemade"},
		},
		{
			name:    "nothing translated",
			section: domain.Text{FR: "Entrées"},
			item:    domain.Text{FR: "Soupe"},
			desc:    domain.Text{FR: "Maison"},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Entrées", "Soupe", "Maison"},
		},
		{
			name:    "section only",
			section: domain.Text{FR: "Entrées", EN: "Starters"},
			item:    domain.Text{FR: "Soupe"},
			desc:    domain.Text{FR: "Maison"},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Starters", "Soupe", "Maison"},
		},
		{
			name:    "item name only",
			section: domain.Text{FR: "Entrées"},
			item:    domain.Text{FR: "Soupe", EN: "Soup"},
			desc:    domain.Text{FR: "Maison"},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Entrées", "Soup", "Maison"},
		},
		{
			name:    "description only",
			section: domain.Text{FR: "Entrées"},
			item:    domain.Text{FR: "Soupe"},
			desc:    domain.Text{FR: "Maison", EN: "Homemade"},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Entrées", "Soupe", "Homemade"},
		},
		{
			name:    "empty english is no translation",
			section: domain.Text{FR: "Entrées", EN: ""},
			item:    domain.Text{FR: "Soupe", EN: ""},
			desc:    domain.Text{FR: "Maison", EN: ""},
			wantFR:  texts{"Entrées", "Soupe", "Maison"},
			wantEN:  texts{"Entrées", "Soupe", "Maison"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			desc := tc.desc
			e := establishment(t, menuType("carte", domain.SourceGenerated, domain.MenuVersion{
				ID: "v1",
				Sections: []domain.Section{{Name: tc.section, Position: 1, Items: []domain.Item{
					{ID: 1, Name: tc.item, Description: &desc},
				}}},
			}))
			b := Render(e, 7)
			for _, v := range []struct {
				name string
				doc  dockey.Document
				want texts
			}{
				{"all", b.MenuDetails["carte"].All, tc.wantFR},
				{"fr", b.MenuDetails["carte"].FR, tc.wantFR},
				{"en", b.MenuDetails["carte"].EN, tc.wantEN},
			} {
				d := decode[detailDoc](t, v.doc)
				s := d.Sections[0]
				got := texts{s.Name, s.Items[0].Name, *s.Items[0].Description}
				if got != v.want {
					t.Errorf("%s: got %+v, want %+v", v.name, got, v.want)
				}
			}
		})
	}
}

func TestItemWithoutDescriptionOrPrice(t *testing.T) {
	price := domain.Price("12.50")
	e := establishment(t, menuType("carte", domain.SourceGenerated, domain.MenuVersion{
		ID: "v1",
		Sections: []domain.Section{{Name: domain.Text{FR: "Plats"}, Items: []domain.Item{
			{ID: 1, Name: domain.Text{FR: "Menu", EN: "Set menu"}},
			{ID: 2, Name: domain.Text{FR: "Plat"}, Price: &price, ALaCarte: true},
		}}},
	}))
	for _, doc := range []dockey.Document{Render(e, 1).MenuDetails["carte"].All, Render(e, 1).MenuDetails["carte"].EN} {
		items := decode[detailDoc](t, doc).Sections[0].Items
		if items[0].Description != nil || items[0].Price != nil {
			t.Errorf("item 1: got description %v price %v, want null and null", items[0].Description, items[0].Price)
		}
		if items[1].Price == nil || *items[1].Price != "12.50" {
			t.Errorf("item 2: got price %v, want \"12.50\"", items[1].Price)
		}
	}
	if !bytes.Contains(Render(e, 1).MenuDetails["carte"].All.Body, []byte(`"description":null,"price":null`)) {
		t.Errorf("null description and price are not written as null keys")
	}
}

func TestAssetFilteringPerVariant(t *testing.T) {
	asset := func(scope domain.LanguageScope) domain.Asset {
		return domain.Asset{LanguageScope: scope, URLs: []string{"https://cdn.example.fr/" + string(scope) + ".pdf"}}
	}
	tests := []struct {
		name                           string
		assets                         []domain.Asset
		wantAll, wantFR, wantEN        []string
		wantRedirectFR, wantRedirectEN string
	}{
		{"none", nil, []string{}, []string{}, []string{}, "", ""},
		{"fr only", []domain.Asset{asset("fr")}, []string{"fr"}, []string{"fr"}, []string{}, "fr", ""},
		{"en only", []domain.Asset{asset("en")}, []string{"en"}, []string{}, []string{"en"}, "", "en"},
		{"fr_en only", []domain.Asset{asset("fr_en")}, []string{"fr_en"}, []string{"fr_en"}, []string{"fr_en"}, "fr_en", "fr_en"},
		{"all three", []domain.Asset{asset("fr_en"), asset("en"), asset("fr")}, []string{"fr_en", "en", "fr"}, []string{"fr_en", "fr"}, []string{"fr_en", "en"}, "fr", "en"},
		{"fr and fr_en", []domain.Asset{asset("fr"), asset("fr_en")}, []string{"fr", "fr_en"}, []string{"fr", "fr_en"}, []string{"fr_en"}, "fr", "fr_en"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := establishment(t, menuType("vins", domain.SourceUploaded, domain.MenuVersion{ID: "v1", Assets: tc.assets}))
			b := Render(e, 1)
			scopes := func(d dockey.Document) []string {
				out := []string{}
				for _, a := range decode[detailDoc](t, d).Assets {
					out = append(out, a.LanguageScope)
				}
				return out
			}
			listScopes := func(d dockey.Document) []string {
				out := []string{}
				for _, a := range decode[listDoc](t, d).Menus[0].Assets {
					out = append(out, a.LanguageScope)
				}
				return out
			}
			for _, v := range []struct {
				name   string
				detail dockey.Document
				list   dockey.Document
				want   []string
			}{
				{"all", b.MenuDetails["vins"].All, b.Menus.All, tc.wantAll},
				{"fr", b.MenuDetails["vins"].FR, b.Menus.FR, tc.wantFR},
				{"en", b.MenuDetails["vins"].EN, b.Menus.EN, tc.wantEN},
			} {
				if diff := cmp.Diff(v.want, scopes(v.detail)); diff != "" {
					t.Errorf("detail %s assets (-want +got):\n%s", v.name, diff)
				}
				if diff := cmp.Diff(v.want, listScopes(v.list)); diff != "" {
					t.Errorf("list %s assets (-want +got):\n%s", v.name, diff)
				}
			}
			url := func(scope string) string {
				if scope == "" {
					return ""
				}
				return "https://cdn.example.fr/" + scope + ".pdf"
			}
			want := dockey.Redirect{FR: url(tc.wantRedirectFR), EN: url(tc.wantRedirectEN)}
			if got := b.Redirects["vins"]; got != want {
				t.Errorf("redirect: got %+v, want %+v", got, want)
			}
		})
	}
}

func TestRedirectTakesFirstPageOfFirstMatchingFile(t *testing.T) {
	e := establishment(t, menuType("carte", domain.SourceUploaded, domain.MenuVersion{ID: "v1", Assets: []domain.Asset{
		{LanguageScope: "fr_en", URLs: []string{"https://cdn.example.fr/both-1.pdf", "https://cdn.example.fr/both-2.pdf"}},
		{LanguageScope: "fr", URLs: []string{"https://cdn.example.fr/fr-a-1.jpg", "https://cdn.example.fr/fr-a-2.jpg"}},
		{LanguageScope: "fr", URLs: []string{"https://cdn.example.fr/fr-b-1.jpg"}},
		{LanguageScope: "en", URLs: []string{"https://cdn.example.fr/en-é 1.jpg"}},
	}}))
	got := Render(e, 1).Redirects["carte"]
	want := dockey.Redirect{FR: "https://cdn.example.fr/fr-a-1.jpg", EN: "https://cdn.example.fr/en-%C3%A9%201.jpg"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMasterMenuURL(t *testing.T) {
	e := establishment(t)
	if b := Render(e, 1); b.MasterMenuURL != "" || !bytes.Contains(b.Menus.All.Body, []byte(`"master_menu_url":null`)) {
		t.Errorf("without a unified file: got %q and %s", b.MasterMenuURL, b.Menus.All.Body)
	}
	u := "https://cdn.example.fr/carte.pdf"
	e.MasterMenuURL = &u
	if b := Render(e, 1); b.MasterMenuURL != u || !bytes.Contains(b.Menus.EN.Body, []byte(`"master_menu_url":"`+u+`"`)) {
		t.Errorf("with a unified file: got %q and %s", b.MasterMenuURL, b.Menus.EN.Body)
	}
}

// menuSlugs lists every menu type slug that the bundle exposes anywhere.
func menuSlugs(tb testing.TB, b dockey.Bundle) (lists [3][]string, details, redirects []string) {
	tb.Helper()
	for i, d := range []dockey.Document{b.Menus.All, b.Menus.FR, b.Menus.EN} {
		lists[i] = []string{}
		for _, m := range decode[listDoc](tb, d).Menus {
			lists[i] = append(lists[i], m.MenuType.Slug)
		}
	}
	details = slices.Sorted(maps.Keys(b.MenuDetails))
	redirects = slices.Sorted(maps.Keys(b.Redirects))
	return lists, details, redirects
}

func TestMenuSelection(t *testing.T) {
	v := func(tb testing.TB, id, ref string) domain.MenuVersion {
		mv := domain.MenuVersion{ID: domain.Slug(id), Assets: []domain.Asset{{LanguageScope: "fr_en", URLs: []string{"https://cdn.example.fr/" + id + ".pdf"}}}}
		if ref != "" {
			mv.ReferenceDate = datePtr(tb, ref)
		}
		return mv
	}
	typ := func(slug string, rotation domain.Rotation, web bool, versions ...domain.MenuVersion) domain.MenuType {
		return domain.MenuType{
			MenuTypeAttrs: domain.MenuTypeAttrs{Slug: domain.Slug(slug), Name: slug, Kind: "menu", Source: domain.SourceUploaded, WebDelivery: web, Rotation: rotation},
			Versions:      versions,
		}
	}
	// Today is Wednesday 2026-11-18, ISO week 47.
	tests := []struct {
		name    string
		typ     domain.MenuType
		want    bool
		wantRef string
	}{
		{"undated with web delivery", typ("a", domain.RotationNone, true, v(t, "v1", ""), v(t, "v2", "")), true, ""},
		{"undated without web delivery", typ("a", domain.RotationNone, false, v(t, "v1", "")), false, ""},
		{"dated without web delivery", typ("a", domain.RotationDaily, false, v(t, "d", "2026-11-18")), false, ""},
		{"no version", typ("a", domain.RotationNone, true), false, ""},
		{"daily today", typ("a", domain.RotationDaily, true, v(t, "d1", "2026-11-17"), v(t, "d2", "2026-11-18")), true, "2026-11-18"},
		{"daily none today falls back to latest past", typ("a", domain.RotationDaily, true, v(t, "d1", "2026-11-16"), v(t, "d2", "2026-11-17"), v(t, "d3", "2026-11-19")), true, "2026-11-17"},
		{"daily only future", typ("a", domain.RotationDaily, true, v(t, "d3", "2026-11-19")), false, ""},
		{"weekly this week", typ("a", domain.RotationWeekly, true, v(t, "w46", "2026-11-09"), v(t, "w47", "2026-11-16"), v(t, "w48", "2026-11-23")), true, "2026-11-16"},
		{"weekly only future", typ("a", domain.RotationWeekly, true, v(t, "w48", "2026-11-23")), false, ""},
		{"monthly this month, later date not served early", typ("a", domain.RotationMonthly, true, v(t, "m1", "2026-11-01"), v(t, "m2", "2026-11-25")), true, "2026-11-01"},
		{"monthly only future", typ("a", domain.RotationMonthly, true, v(t, "m12", "2026-12-01")), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := Render(establishment(t, tc.typ), 1)
			lists, details, redirects := menuSlugs(t, b)
			want := []string{}
			if tc.want {
				want = []string{"a"}
			}
			for i, l := range lists {
				if diff := cmp.Diff(want, l); diff != "" {
					t.Errorf("menu list %d (-want +got):\n%s", i, diff)
				}
			}
			if diff := cmp.Diff(want, details, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("menu details (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, redirects, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("redirects (-want +got):\n%s", diff)
			}
			if tc.want {
				d := decode[detailDoc](t, b.MenuDetails["a"].All)
				got := ""
				if d.ReferenceDate != nil {
					got = *d.ReferenceDate
				}
				if got != tc.wantRef {
					t.Errorf("reference_date: got %q, want %q", got, tc.wantRef)
				}
			}
		})
	}
}

func TestMenuOrderFollowsPosition(t *testing.T) {
	mk := func(slug string, pos int) domain.MenuType {
		mt := menuType(slug, domain.SourceUploaded, domain.MenuVersion{ID: "v1"})
		mt.Position = pos
		return mt
	}
	e := establishment(t)
	e.MenuTypes = []domain.MenuType{mk("c", 2), mk("a", 0), mk("b", 1)}
	lists, _, _ := menuSlugs(t, Render(e, 1))
	if diff := cmp.Diff([]string{"a", "b", "c"}, lists[0]); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestSectionsOrderedByPositionAndEmptyForUploaded(t *testing.T) {
	sections := []domain.Section{
		{Name: domain.Text{FR: "C"}, Position: 3, Items: []domain.Item{}},
		{Name: domain.Text{FR: "A"}, Position: 1, Items: []domain.Item{}},
		{Name: domain.Text{FR: "B"}, Position: 2, Items: []domain.Item{}},
	}
	e := establishment(t,
		menuType("gen", domain.SourceGenerated, domain.MenuVersion{ID: "v1", Sections: sections}),
		menuType("up", domain.SourceUploaded, domain.MenuVersion{ID: "v1", Sections: sections}),
	)
	b := Render(e, 1)
	var got []string
	for _, s := range decode[detailDoc](t, b.MenuDetails["gen"].All).Sections {
		got = append(got, s.Name)
	}
	if diff := cmp.Diff([]string{"A", "B", "C"}, got); diff != "" {
		t.Errorf("generated sections (-want +got):\n%s", diff)
	}
	if !bytes.HasSuffix(b.MenuDetails["up"].EN.Body, []byte(`"sections":[]}`)) {
		t.Errorf("uploaded sections: got %s, want an empty array", b.MenuDetails["up"].EN.Body)
	}
}

func TestEstablishmentAllNullsAndCategoryAlias(t *testing.T) {
	e := &domain.Establishment{Slug: "x", Created: true, Status: domain.StatusActive, Identity: domain.Identity{Name: "X"}}
	want := `{"language":"fr","content_revision":42,"name":"X","description":null,"business_type":"restaurant",` +
		`"public_category":null,"category":null,"website_url":null,"menu_url":null,` +
		`"contact":{"email":null,"phone_number":null},"location":{"address":null,"latitude":null,"longitude":null},"logo_url":null}`
	if got := string(Render(e, 42).Establishment.Body); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	cat := "Crêperie"
	e.Identity.PublicCategory = &cat
	if got := Render(e, 1).Establishment.Body; !bytes.Contains(got, []byte(`"public_category":"Crêperie","category":"Crêperie"`)) {
		t.Errorf("category is not public_category: %s", got)
	}
	wantHours := `{"content_revision":42,"business_hours_summary":null,"business_hours":[],"special_hours_coming":[]}`
	if got := string(Render(e, 42).Hours.Body); got != wantHours {
		t.Errorf("got  %s\nwant %s", got, wantHours)
	}
}

func TestOwnSummaryWins(t *testing.T) {
	e := fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	own := "Ouvert du mardi au samedi"
	e.Hours.Summary = &own
	if got := Render(e, 1).Hours.Body; !bytes.Contains(got, []byte(`"business_hours_summary":"Ouvert du mardi au samedi"`)) {
		t.Errorf("own summary not used: %s", got)
	}
}

func TestRenderIsPureAndDeterministic(t *testing.T) {
	e := fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	before, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Render(e, 5), Render(e, 5)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two renderings differ (-first +second):\n%s", diff)
	}
	after, _ := json.Marshal(e)
	if !bytes.Equal(before, after) {
		t.Errorf("rendering modified the aggregate")
	}
	va, _ := dockey.EncodeBundle(&a)
	vb, _ := dockey.EncodeBundle(&b)
	if !bytes.Equal(va, vb) {
		t.Errorf("two encodings of the same bundle differ")
	}
}

func TestEncodeBundleKeepsBodiesByteForByte(t *testing.T) {
	b := Render(fixture.Load(t, "testdata/dated/snapshot.json", fixture.Date(t, "2026-11-18")), 3)
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	var got dockey.Bundle
	if err := dockey.Decode(value, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Establishment.Body, b.Establishment.Body) {
		t.Errorf("decoded body differs:\ngot  %s\nwant %s", got.Establishment.Body, b.Establishment.Body)
	}
	if diff := cmp.Diff(normalBundle(&b), normalBundle(&got)); diff != "" {
		t.Errorf("round trip (-rendered +decoded):\n%s", diff)
	}
}

func TestETag(t *testing.T) {
	// xxhash64 of the empty input is ef46db3751d8e999.
	if got, want := ETag(nil), `"ef46db3751d8e999"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if ETag([]byte("a")) == ETag([]byte("b")) {
		t.Errorf("different bodies share an entity tag")
	}
}

// TestSameAccessCoversBundle fails when dockey.Bundle gains a field that SameAccess does not know:
// such a field would not trigger a write when it changes. (Sequence is the projector's own: a
// bundle is not written again because a record changed nothing in it. Base and Starts are a day
// ahead's, which NextAhead compares itself.)
func TestSameAccessCoversBundle(t *testing.T) {
	known := []string{
		"Slug", "Revision", "Sequence", "Base", "Starts", "Status", "APIEnabled", "KeyHash", "MenuRedirectEnabled", "MasterMenuURL",
		"Redirects", "Establishment", "Hours", "Menus", "MenuDetails", "JSONLD",
	}
	var got []string
	typ := reflect.TypeFor[dockey.Bundle]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if diff := cmp.Diff(known, got); diff != "" {
		t.Errorf("dockey.Bundle fields changed; update SameAccess and this list (-known +got):\n%s", diff)
	}
}

func TestLocationOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"https://cdn.example.fr/a.pdf?x=1&y=2", "https://cdn.example.fr/a.pdf?x=1&y=2"},
		{"https://cdn.example.fr/carte été.pdf", "https://cdn.example.fr/carte%20%C3%A9t%C3%A9.pdf"},
		{"https://cdn.example.fr/a\x7f", "https://cdn.example.fr/a%7F"},
	}
	for _, tc := range tests {
		if got := locationHeader(tc.in); got != tc.want {
			t.Errorf("locationOf(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkRenderDemo(b *testing.B) {
	e := fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))
	b.ReportAllocs()
	for b.Loop() {
		_ = Render(e, 42)
	}
}

func BenchmarkEncodeBundleDemo(b *testing.B) {
	bundle := Render(fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22")), 42)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dockey.EncodeBundle(&bundle); err != nil {
			b.Fatal(err)
		}
	}
}

// FitsIn agrees with the exact encoded size on every side of it, whether it bounded the size or
// had to measure it.
func TestFitsInAgreesWithEncodedSize(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures(t) {
		name, e := f.name, f.e
		exact, err := EncodedSize(e, "")
		if err != nil {
			t.Fatal(err)
		}
		bound, err := StateBound(e, "")
		if err != nil {
			t.Fatal(err)
		}
		// The state's bound and the one below it: FitsIn answers from the state alone, then
		// renders.
		for _, limit := range []int{exact - 1, exact, exact + 1, 2 * exact, 10 * exact, bound - 1, bound} {
			fits, size, err := FitsIn(e, "", limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := exact <= limit; fits != want {
				t.Errorf("%s: FitsIn(%d) with an exact size of %d: got %t, want %t", name, limit, exact, fits, want)
			}
			if !fits && size != exact {
				t.Errorf("%s: FitsIn(%d) measured %d, want %d", name, limit, size, exact)
			}
		}
	}
}

// BenchmarkFitsInDemo measures the size check a write side makes before accepting a change to
// an existing establishment.
func BenchmarkFitsInDemo(b *testing.B) {
	e := fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))
	b.ReportAllocs()
	for b.Loop() {
		if fits, _, err := FitsIn(e, "https://api.example.fr", 8<<20); !fits || err != nil {
			b.Fatal(fits, err)
		}
	}
}
