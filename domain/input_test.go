package domain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

const (
	demoPath = "../cmd/publisher/demo.json"
	basePath = "testdata/base.json"
	demoSlug = domain.Slug("chez-marcel")
	baseSlug = domain.Slug("le-petit-zinc")
)

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// testKey returns a distinct API key for each n.
func testKey(n byte) domain.APIKey {
	var random [32]byte
	for i := range random {
		random[i] = n + byte(i)
	}
	return domain.NewAPIKey(random)
}

// importBody parses body and imports it into est, as the admin API does.
func importBody(tb testing.TB, est *domain.Establishment, body []byte, key domain.APIKey) (domain.ImportResult, error) {
	tb.Helper()
	s, err := domain.ParseInput(bytes.NewReader(body))
	if err != nil {
		return domain.ImportResult{}, err
	}
	return est.Import(s, key)
}

// imported returns the state of slug after importing body into a new establishment.
func imported(tb testing.TB, slug domain.Slug, body []byte) *domain.Establishment {
	tb.Helper()
	res, err := importBody(tb, domain.New(slug), body, testKey(1))
	if err != nil {
		tb.Fatalf("import: %v", err)
	}
	return domain.Rebuild(slug, res.Events)
}

func eventTypes(evs []domain.Event) []string {
	out := []string{}
	for _, ev := range evs {
		out = append(out, ev.EventType())
	}
	return out
}

func fieldPaths(err error) []string {
	out := []string{}
	for _, fe := range domain.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	slices.Sort(out)
	return out
}

// A mutation changes a JSON document decoded into maps and slices.
type mutation func(tb testing.TB, doc map[string]any)

func mutate(tb testing.TB, body []byte, muts ...mutation) []byte {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		tb.Fatal(err)
	}
	for _, m := range muts {
		m(tb, doc)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// pathStep is one step of a path such as menu_types[0].versions[1].id: a key, or an index when
// key is empty.
type pathStep struct {
	key   string
	index int
}

func parsePath(tb testing.TB, path string) []pathStep {
	tb.Helper()
	var steps []pathStep
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		steps = append(steps, pathStep{key: key})
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil {
				tb.Fatalf("bad path %q", path)
			}
			steps = append(steps, pathStep{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps
}

// locate returns the container that holds the last step of path, and that step.
func locate(tb testing.TB, doc map[string]any, path string) (any, pathStep) {
	tb.Helper()
	steps := parsePath(tb, path)
	var cur any = doc
	for _, s := range steps[:len(steps)-1] {
		cur = stepInto(tb, cur, s, path)
	}
	return cur, steps[len(steps)-1]
}

func stepInto(tb testing.TB, cur any, s pathStep, path string) any {
	tb.Helper()
	switch c := cur.(type) {
	case map[string]any:
		if v, ok := c[s.key]; ok && s.key != "" {
			return v
		}
	case []any:
		if s.key == "" && s.index < len(c) {
			return c[s.index]
		}
	}
	tb.Fatalf("path %q: no %+v in %T", path, s, cur)
	return nil
}

func get(tb testing.TB, doc map[string]any, path string) any {
	tb.Helper()
	parent, last := locate(tb, doc, path)
	return stepInto(tb, parent, last, path)
}

func set(path string, v any) mutation {
	return func(tb testing.TB, doc map[string]any) {
		tb.Helper()
		parent, last := locate(tb, doc, path)
		switch p := parent.(type) {
		case map[string]any:
			p[last.key] = v
		case []any:
			p[last.index] = v
		default:
			tb.Fatalf("set %q: parent is %T", path, parent)
		}
	}
}

func del(path string) mutation {
	return func(tb testing.TB, doc map[string]any) {
		tb.Helper()
		parent, last := locate(tb, doc, path)
		switch p := parent.(type) {
		case map[string]any:
			delete(p, last.key)
		default:
			tb.Fatalf("del %q: parent is %T", path, parent)
		}
	}
}

// edit replaces the array at path by what f makes of a deep copy of it.
func edit(path string, f func([]any) []any) mutation {
	return func(tb testing.TB, doc map[string]any) {
		tb.Helper()
		a, ok := get(tb, doc, path).([]any)
		if !ok {
			tb.Fatalf("edit %q: not an array", path)
		}
		set(path, f(deepCopy(tb, a)))(tb, doc)
	}
}

func deepCopy(tb testing.TB, v []any) []any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestImportDemo(t *testing.T) {
	t.Parallel()
	key := testKey(7)
	res, err := importBody(t, domain.New(demoSlug), readFile(t, demoPath), key)
	if err != nil {
		t.Fatalf("import demo: %v", err)
	}
	want := []string{
		domain.TypeEstablishmentCreated, domain.TypeIdentityChanged, domain.TypeHoursChanged,
		domain.TypeSpecialHoursChanged, domain.TypeMasterMenuChanged,
		domain.TypeMenuTypeDefined, domain.TypeMenuVersionPublished,
		domain.TypeMenuTypeDefined, domain.TypeMenuVersionPublished, domain.TypeMenuVersionPublished,
		domain.TypeMenuTypeDefined, domain.TypeMenuVersionPublished,
		domain.TypeMenuTypeDefined, domain.TypeMenuVersionPublished,
		domain.TypeMenuRedirectChanged, domain.TypePublicAPIEnabled, domain.TypeActivated,
	}
	if diff := cmp.Diff(want, eventTypes(res.Events)); diff != "" {
		t.Errorf("event types mismatch (-want +got):\n%s", diff)
	}
	if res.APIKey != key {
		t.Errorf("APIKey: got %q, want %q", res.APIKey, key)
	}

	est := domain.Rebuild(demoSlug, res.Events)
	if est.Status != domain.StatusActive || !est.PublicAPIEnabled || !est.MenuRedirectEnabled {
		t.Errorf("status, api, redirect: got %q, %v, %v, want active, true, true", est.Status, est.PublicAPIEnabled, est.MenuRedirectEnabled)
	}
	if est.APIKeyHash != key.Hash() {
		t.Errorf("APIKeyHash: got %q, want %q", est.APIKeyHash, key.Hash())
	}
	if est.TimeZone != "Europe/Paris" || est.Identity.Name != "Chez Marcel" || est.Identity.BusinessType != "restaurant" {
		t.Errorf("timezone, name, business type: got %q, %q, %q", est.TimeZone, est.Identity.Name, est.Identity.BusinessType)
	}
	var slugs []domain.Slug
	for _, mt := range est.MenuTypes {
		slugs = append(slugs, mt.Slug)
	}
	if diff := cmp.Diff([]domain.Slug{"la-carte", "menu-du-jour", "vins", "traiteur"}, slugs); diff != "" {
		t.Errorf("menu types mismatch (-want +got):\n%s", diff)
	}
	carte, _ := est.MenuType("la-carte")
	v, ok := carte.Current(domain.LocalDate{})
	if !ok || v.ID != "automne-2026" || len(v.Sections) != 3 || *v.Sections[0].Items[0].Price != "12.50" {
		t.Errorf("la-carte current: got %+v, %v", v, ok)
	}
	if got := len(est.Hours.Ranges); got != 9 {
		t.Errorf("opening ranges: got %d, want 9", got)
	}
}

func TestImportAgainChangesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		slug domain.Slug
		path string
	}{
		{"demo", demoSlug, demoPath},
		{"base", baseSlug, basePath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := readFile(t, tc.path)
			est := imported(t, tc.slug, body)
			res, err := importBody(t, est, body, testKey(2))
			if err != nil {
				t.Fatalf("import again: %v", err)
			}
			if len(res.Events) != 0 || res.APIKey != "" {
				t.Errorf("import again: got events %v and key %q, want none", eventTypes(res.Events), res.APIKey)
			}
		})
	}
}

func TestImportOneChange(t *testing.T) {
	t.Parallel()
	const (
		carteItem = "menu_types[0].versions[0].sections[0].items[0]"
		jour      = "menu_types[1].versions"
	)
	newVersion := map[string]any{
		"id": "2027", "reference_date": nil, "sections": []any{},
		"assets": []any{map[string]any{"language_scope": "fr_en", "urls": []any{"https://cdn.example.fr/vins-2027.pdf"}}},
	}
	newType := map[string]any{
		"slug": "brunch", "name": "Brunch", "kind": "menu", "source": "uploaded", "web_delivery": true,
		"versions": []any{newVersion},
	}
	tests := []struct {
		name string
		mut  mutation
		want []string
	}{
		{"name", set("name", "Chez Marcel et fils"), []string{domain.TypeIdentityChanged}},
		{"description cleared", set("description", nil), []string{domain.TypeIdentityChanged}},
		{"contact e-mail", set("contact.email", "contact@chez-marcel.example.fr"), []string{domain.TypeIdentityChanged}},
		{"location removed", del("location"), []string{domain.TypeIdentityChanged}},
		{"business type", set("business_type", "wine_shop"), []string{domain.TypeIdentityChanged}},
		{"timezone", set("timezone", "Europe/Brussels"), []string{domain.TypeTimeZoneChanged}},
		{"opening time", set("business_hours[0].open_time", "11:45"), []string{domain.TypeHoursChanged}},
		{"hours summary", set("business_hours_summary", "Du mardi au samedi"), []string{domain.TypeHoursChanged}},
		{"hours emptied", set("business_hours", []any{}), []string{domain.TypeHoursChanged}},
		{"special hours", set("special_hours[0].closed", true), []string{domain.TypeSpecialHoursChanged}},
		{"special hours removed", del("special_hours"), []string{domain.TypeSpecialHoursChanged}},
		{"master menu", set("master_menu_url", "https://cdn.chez-marcel.example.fr/carte-2027.pdf"), []string{domain.TypeMasterMenuChanged}},
		{"master menu cleared", set("master_menu_url", nil), []string{domain.TypeMasterMenuChanged}},
		{"menu type name", set("menu_types[0].name", "Notre carte"), []string{domain.TypeMenuTypeDefined}},
		{"menu type web delivery", set("menu_types[2].web_delivery", false), []string{domain.TypeMenuTypeDefined}},
		{"menu type rotation", set("menu_types[0].rotation", "monthly"), []string{domain.TypeMenuTypeDefined}},
		{"item price", set(carteItem+".price", "13.00"), []string{domain.TypeMenuVersionPublished}},
		{"item translation", set(carteItem+".name.en", "Perfect egg"), []string{domain.TypeMenuVersionPublished}},
		{"asset url", set("menu_types[2].versions[0].assets[0].urls[1]", "https://cdn.chez-marcel.example.fr/vins-3.pdf"), []string{domain.TypeMenuVersionPublished}},
		{"version added", edit("menu_types[2].versions", func(vs []any) []any { return append(vs, newVersion) }), []string{domain.TypeMenuVersionPublished}},
		{"last version removed", edit(jour, func(vs []any) []any { return vs[:1] }), []string{domain.TypeMenuVersionWithdrawn}},
		{"first version removed", edit(jour, func(vs []any) []any { return vs[1:] }), []string{
			domain.TypeMenuVersionWithdrawn, domain.TypeMenuVersionWithdrawn, domain.TypeMenuVersionPublished,
		}},
		{"versions reordered", edit(jour, func(vs []any) []any { return []any{vs[1], vs[0]} }), []string{
			domain.TypeMenuVersionWithdrawn, domain.TypeMenuVersionWithdrawn,
			domain.TypeMenuVersionPublished, domain.TypeMenuVersionPublished,
		}},
		{"menu type removed", edit("menu_types", func(ms []any) []any { return ms[:3] }), []string{domain.TypeMenuTypeRemoved}},
		{"menu type added", edit("menu_types", func(ms []any) []any { return append(ms, newType) }), []string{
			domain.TypeMenuTypeDefined, domain.TypeMenuVersionPublished,
		}},
		{"menu types reordered", edit("menu_types", func(ms []any) []any { return []any{ms[0], ms[1], ms[3], ms[2]} }), []string{
			domain.TypeMenuTypeDefined, domain.TypeMenuTypeDefined,
		}},
		{"menu redirect off", set("settings.menu_redirect_enabled", false), []string{domain.TypeMenuRedirectChanged}},
		{"public api off", set("settings.public_api_enabled", false), []string{domain.TypePublicAPIDisabled}},
		{"settings absent", del("settings"), []string{}},
		{"settings empty", set("settings", map[string]any{}), []string{}},
		{"status absent", del("status"), []string{}},
	}
	demo := readFile(t, demoPath)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			est := imported(t, demoSlug, demo)
			body := mutate(t, demo, tc.mut)
			res, err := importBody(t, est, body, testKey(3))
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if diff := cmp.Diff(tc.want, eventTypes(res.Events)); diff != "" {
				t.Errorf("event types mismatch (-want +got):\n%s", diff)
			}
			for _, ev := range res.Events {
				est.Apply(ev)
			}
			res, err = importBody(t, est, body, testKey(4))
			if err != nil || len(res.Events) != 0 {
				t.Errorf("import the changed document again: got %v, %v, want no events", eventTypes(res.Events), err)
			}
		})
	}
}

func TestImportChangedVersionOrderServesTheNewLatest(t *testing.T) {
	t.Parallel()
	demo := readFile(t, demoPath)
	est := imported(t, demoSlug, demo)
	body := mutate(t, demo, edit("menu_types[0].versions", func(vs []any) []any {
		v := deepCopy(t, vs)[0].(map[string]any)
		v["id"] = "hiver-2026"
		return append(vs, v)
	}), edit("menu_types[0].versions", func(vs []any) []any { return []any{vs[1], vs[0]} }))
	res, err := importBody(t, est, body, testKey(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range res.Events {
		est.Apply(ev)
	}
	mt, _ := est.MenuType("la-carte")
	if v, _ := mt.Current(domain.LocalDate{}); v.ID != "automne-2026" {
		t.Errorf("current after reordering: got %q, want the last listed, automne-2026", v.ID)
	}
}

func TestImportRefusesGoingBackToDraft(t *testing.T) {
	t.Parallel()
	demo := readFile(t, demoPath)
	est := imported(t, demoSlug, demo)
	res, err := importBody(t, est, mutate(t, demo, set("status", "draft")), testKey(3))
	var fe *domain.FieldError
	if !errors.As(err, &fe) || fe.Field != "status" {
		t.Fatalf("import status draft: got %v, want a FieldError on status", err)
	}
	if len(res.Events) != 0 {
		t.Errorf("import status draft: got events %v, want none", eventTypes(res.Events))
	}
}

func TestImportDraftThenActive(t *testing.T) {
	t.Parallel()
	base := readFile(t, basePath)
	est := imported(t, baseSlug, mutate(t, base, set("status", "draft")))
	if est.Status != domain.StatusDraft {
		t.Fatalf("status: got %q, want draft", est.Status)
	}
	res, err := importBody(t, est, base, testKey(3))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{domain.TypeActivated}, eventTypes(res.Events)); diff != "" {
		t.Errorf("event types mismatch (-want +got):\n%s", diff)
	}
}

func TestImportEnablesAPI(t *testing.T) {
	t.Parallel()
	base := readFile(t, basePath)
	est := imported(t, baseSlug, base)
	if est.PublicAPIEnabled || est.APIKeyHash != "" {
		t.Fatalf("after the first import: got api %v, hash %q, want disabled", est.PublicAPIEnabled, est.APIKeyHash)
	}
	key := testKey(9)
	res, err := importBody(t, est, mutate(t, base, set("settings.public_api_enabled", true)), key)
	if err != nil {
		t.Fatal(err)
	}
	if res.APIKey != key {
		t.Errorf("APIKey: got %q, want %q", res.APIKey, key)
	}
	want := []domain.Event{domain.PublicAPIEnabled{KeyHash: key.Hash()}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestImportSlugMismatch(t *testing.T) {
	t.Parallel()
	res, err := importBody(t, domain.New("autre-etablissement"), readFile(t, basePath), testKey(1))
	var fe *domain.FieldError
	if !errors.As(err, &fe) || fe.Field != "slug" {
		t.Fatalf("import: got %v, want a FieldError on slug", err)
	}
	if len(res.Events) != 0 {
		t.Errorf("import: got events %v, want none", eventTypes(res.Events))
	}
}

// badInputCases are small changes of testdata/base.json, or whole bodies when mut is nil, that
// the import refuses, with the paths of the fields it names.
func badInputCases() []struct {
	name string
	mut  mutation
	raw  string
	want []string
} {
	const (
		carte  = "menu_types[0]"
		item0  = carte + ".versions[0].sections[0].items[0]"
		item1  = carte + ".versions[0].sections[0].items[1]"
		asset0 = carte + ".versions[0].assets[0]"
		weekly = "menu_types[1]"
	)
	section := map[string]any{"name": map[string]any{"fr": "Rouges"}, "items": []any{}}
	return []struct {
		name string
		mut  mutation
		raw  string
		want []string
	}{
		{name: "bad slug", mut: set("slug", "Le Petit Zinc"), want: []string{"slug"}},
		{name: "missing slug", mut: del("slug"), want: []string{"slug"}},
		{name: "unknown top-level field", mut: set("colour", "red"), want: []string{"colour"}},
		{name: "unknown nested field", mut: set(item0+".colour", "red"), want: []string{item0 + ".colour"}},
		{name: "unknown settings field", mut: set("settings.redirect_enabled", true), want: []string{"settings.redirect_enabled"}},
		{name: "name as number", mut: set("name", 12), want: []string{"name"}},
		{name: "price as number", mut: set(item0+".price", 12.5), want: []string{item0 + ".price"}},
		{name: "a_la_carte as string", mut: set(item0+".a_la_carte", "yes"), want: []string{item0 + ".a_la_carte"}},
		{name: "business_hours as object", mut: set("business_hours", map[string]any{}), want: []string{"business_hours"}},
		{name: "item id as string", mut: set(item0+".id", "1"), want: []string{item0 + ".id"}},
		{name: "item id fraction", mut: set(item0+".id", 1.5), want: []string{item0 + ".id"}},
		{name: "open_time 25:00", mut: set("business_hours[0].open_time", "25:00"), want: []string{"business_hours[0].open_time"}},
		{name: "close_time 7:3", mut: set("business_hours[1].close_time", "7:3"), want: []string{"business_hours[1].close_time"}},
		{name: "open_day in english", mut: set("business_hours[0].open_day", "tuesday"), want: []string{"business_hours[0].open_day"}},
		{name: "close_day unknown", mut: set("business_hours[0].close_day", "Mercredi"), want: []string{"business_hours[0].close_day"}},
		{name: "start_date 2026-02-30", mut: set("special_hours[0].start_date", "2026-02-30"), want: []string{"special_hours[0].start_date"}},
		{name: "end_date before start_date", mut: set("special_hours[0].end_date", "2026-12-23"), want: []string{"special_hours[0].end_date"}},
		{name: "special hours without closed", mut: del("special_hours[0].closed"), want: []string{"special_hours[0].closed"}},
		{name: "price 12.5", mut: set(item0+".price", "12.5"), want: []string{item0 + ".price"}},
		{name: "price -3.00", mut: set(item0+".price", "-3.00"), want: []string{item0 + ".price"}},
		{name: "a la carte item without price", mut: set(item0+".price", nil), want: []string{item0 + ".price"}},
		{name: "item not a la carte with price", mut: set(weekly+".versions[0].sections[0].items[0].price", "9.00"), want: []string{weekly + ".versions[0].sections[0].items[0].price"}},
		{name: "item without a_la_carte", mut: del(item0 + ".a_la_carte"), want: []string{item0 + ".a_la_carte"}},
		{name: "item id zero", mut: set(item0+".id", 0), want: []string{item0 + ".id"}},
		{name: "item without id", mut: del(item0 + ".id"), want: []string{item0 + ".id"}},
		{name: "duplicate item id", mut: set(item1+".id", 1), want: []string{item1 + ".id"}},
		{name: "item name without fr", mut: set(item0+".name", map[string]any{"en": "Cold cuts"}), want: []string{item0 + ".name.fr"}},
		{name: "section name without fr", mut: set(carte+".versions[0].sections[0].name.fr", " "), want: []string{carte + ".versions[0].sections[0].name.fr"}},
		{name: "unknown business_type", mut: set("business_type", "nightclub"), want: []string{"business_type"}},
		{name: "language_scope de", mut: set(asset0+".language_scope", "de"), want: []string{asset0 + ".language_scope"}},
		{name: "asset without urls", mut: del(asset0 + ".urls"), want: []string{asset0 + ".urls"}},
		{name: "asset with empty urls", mut: set(asset0+".urls", []any{}), want: []string{asset0 + ".urls"}},
		{name: "asset url ftp", mut: set(asset0+".urls[0]", "ftp://x"), want: []string{asset0 + ".urls[0]"}},
		{name: "uploaded menu with sections", mut: set("menu_types[2].versions[0].sections", []any{section}), want: []string{"menu_types[2].versions[0].sections"}},
		{name: "duplicate menu type slug", mut: set("menu_types[2].slug", "carte"), want: []string{"menu_types[2].slug"}},
		{name: "duplicate version id", mut: edit(carte+".versions", func(vs []any) []any { return append(vs, vs[0]) }), want: []string{carte + ".versions[1].id"}},
		{name: "dated version without reference_date", mut: set(weekly+".versions[0].reference_date", nil), want: []string{weekly + ".versions[0].reference_date"}},
		{name: "invalid reference_date", mut: set(weekly+".versions[0].reference_date", "16/11/2026"), want: []string{weekly + ".versions[0].reference_date"}},
		{name: "unknown rotation", mut: set(carte+".rotation", "hourly"), want: []string{carte + ".rotation"}},
		{name: "unknown kind", mut: set(carte+".kind", "carte"), want: []string{carte + ".kind"}},
		{name: "unknown source", mut: set(carte+".source", "pdf"), want: []string{carte + ".source"}},
		{name: "missing web_delivery", mut: del(carte + ".web_delivery"), want: []string{carte + ".web_delivery"}},
		{name: "menu type without name", mut: set(carte+".name", ""), want: []string{carte + ".name"}},
		{name: "latitude 91", mut: set("location.latitude", 91), want: []string{"location.latitude"}},
		{name: "longitude -181", mut: set("location.longitude", -181), want: []string{"location.longitude"}},
		{name: "latitude without longitude", mut: del("location.longitude"), want: []string{"location"}},
		{name: "bad phone", mut: set("contact.phone_number", "04 78 00 00 00"), want: []string{"contact.phone_number"}},
		{name: "bad email", mut: set("contact.email", "zinc at example.fr"), want: []string{"contact.email"}},
		{name: "website url relative", mut: set("website_url", "/zinc"), want: []string{"website_url"}},
		{name: "unknown timezone", mut: set("timezone", "Mars/Olympus"), want: []string{"timezone"}},
		{name: "status archived", mut: set("status", "archived"), want: []string{"status"}},
		{name: "name empty", mut: set("name", ""), want: []string{"name"}},
		{name: "name 201 characters", mut: set("name", strings.Repeat("é", 201)), want: []string{"name"}},
		{name: "control character in name", mut: set("name", "Le Petit\x07Zinc"), want: []string{"name"}},
		{name: "C1 control character in name", mut: set("name", "Le Petit\u0085Zinc"), want: []string{"name"}},
		{name: "right-to-left override in name", mut: set("name", "Le Petit \u202ecniZ"), want: []string{"name"}},
		{name: "line break in name", mut: set("name", "Le Petit\nZinc"), want: []string{"name"}},
		{name: "name of invisible characters", mut: set("name", "\ufeff\u200b "), want: []string{"name"}},
		{name: "line break in item name", mut: set(item0+".name.en", "Cold\ncuts"), want: []string{item0 + ".name.en"}},
		{name: "item name fr of zero-width spaces", mut: set(item0+".name.fr", "\u200b\u200b"), want: []string{item0 + ".name.fr"}},
		{name: "bidi isolate in description", mut: set("description", "Bistrot \u2066x\u2069"), want: []string{"description"}},
		{name: "url with a port and no host", mut: set("website_url", "https://:443/zinc"), want: []string{"website_url"}},
		{name: "close_day without close_time", mut: set("business_hours[0].close_time", nil), want: []string{"business_hours[0].close_time"}},
		{name: "range closing before it opens", mut: set("business_hours[0].close_day", "mardi"), want: []string{"business_hours[0].close_time"}},
		{name: "range over more than a day", mut: set("business_hours[0].close_time", "19:00"), want: []string{"business_hours[0].close_time"}},
		{name: "range closing two days later", mut: set("business_hours[0].close_day", "jeudi"), want: []string{"business_hours[0].close_day"}},
		{name: "open exception without times", mut: set("special_hours[0].closed", false), want: []string{"special_hours[0].open_time"}},
		{name: "invalid JSON", raw: `{"slug": "le-petit-zinc",}`, want: []string{"body"}},
		{name: "truncated JSON", raw: `{"slug": "le-petit-zinc", "name": "Le`, want: []string{"body"}},
		{name: "empty body", raw: ``, want: []string{"body"}},
		{name: "whitespace body", raw: " \n\t", want: []string{"body"}},
		{name: "trailing data", raw: `{"slug": "le-petit-zinc", "name": "Le Petit Zinc"} {}`, want: []string{"body"}},
		{name: "array body", raw: `[]`, want: []string{"body"}},
		{name: "duplicate field", raw: `{"slug": "le-petit-zinc", "name": "Le Petit Zinc", "slug": "autre"}`, want: []string{"slug"}},
	}
}

func TestImportBadInput(t *testing.T) {
	t.Parallel()
	base := readFile(t, basePath)
	if _, err := importBody(t, domain.New(baseSlug), base, testKey(1)); err != nil {
		t.Fatalf("the base document does not import: %v", err)
	}
	for _, tc := range badInputCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tc.raw)
			if tc.mut != nil {
				body = mutate(t, base, tc.mut)
			}
			res, err := importBody(t, domain.New(baseSlug), body, testKey(1))
			if err == nil {
				t.Fatalf("import: got events %v, want an error", eventTypes(res.Events))
			}
			if diff := cmp.Diff(tc.want, fieldPaths(err)); diff != "" {
				t.Errorf("field paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
			var fe *domain.FieldError
			if !errors.As(err, &fe) {
				t.Errorf("errors.As(%v, *FieldError): got false, want true", err)
			}
		})
	}
}

func TestImportReportsEveryBadField(t *testing.T) {
	t.Parallel()
	const item0 = "menu_types[0].versions[0].sections[0].items[0]"
	tests := []struct {
		name string
		muts []mutation
		want []string
	}{
		{"validation", []mutation{
			set("slug", "-zinc"), set(item0+".price", "12.5"), set("contact.email", "zinc"),
			set("business_hours[0].open_time", "18h"), set("menu_types[1].versions[0].reference_date", nil),
		}, []string{"business_hours[0].open_time", "contact.email", item0 + ".price", "menu_types[1].versions[0].reference_date", "slug"}},
		{"decoding", []mutation{
			set("colour", "red"), set("name", true), set(item0+".price", 14), set("location.altitude", 170),
		}, []string{"colour", "location.altitude", item0 + ".price", "name"}},
	}
	base := readFile(t, basePath)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := importBody(t, domain.New(baseSlug), mutate(t, base, tc.muts...), testKey(1))
			if diff := cmp.Diff(tc.want, fieldPaths(err)); diff != "" {
				t.Errorf("field paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	type inner struct {
		Note string `json:"note"`
	}
	type target struct {
		inner
		Enabled *bool              `json:"enabled"`
		Date    domain.LocalDate   `json:"date"`
		Days    []domain.Weekday   `json:"days"`
		Counts  map[string]int     `json:"counts"`
		Quoted  int                `json:"quoted,string"`
		Raw     json.RawMessage    `json:"raw"`
		Any     any                `json:"any"`
		Ignored string             `json:"-"`
		Nested  *struct{ N uint8 } `json:"nested"`
	}
	tests := []struct {
		name string
		body string
		want []string // field paths; empty when the body is accepted
	}{
		{"accepted", `{"note":"x","enabled":true,"date":"2026-01-05","days":["lundi"],"counts":{"a":1},"quoted":"5","raw":[1,{"z":2}],"any":{"k":[null]},"nested":{"N":255}}`, nil},
		{"nulls", `{"note":null,"enabled":null,"date":null,"days":null,"counts":null,"nested":null}`, nil},
		{"key in another case", `{"ENABLED":false,"Note":"x"}`, []string{"ENABLED", "Note"}},
		{"wrong boolean", `{"enabled":"yes"}`, []string{"enabled"}},
		{"bad date", `{"date":"2026-02-30"}`, []string{"date"}},
		{"date as number", `{"date":20260105}`, []string{"date"}},
		{"bad day in array", `{"days":["lundi","monday"]}`, []string{"days[1]"}},
		{"bad map value", `{"counts":{"a":1,"b":"2"}}`, []string{"counts.b"}},
		{"integer too large", `{"nested":{"N":256}}`, []string{"nested.N"}},
		{"unknown field in nested", `{"nested":{"M":1}}`, []string{"nested.M"}},
		{"ignored field is unknown", `{"Ignored":"x"}`, []string{"Ignored"}},
		{"duplicate field", `{"note":"a","NOTE":"b"}`, []string{"NOTE"}},
		{"several", `{"enabled":1,"days":{},"x":{"y":[1,2,{}]},"note":[]}`, []string{"days", "enabled", "note", "x"}},
		{"nesting too deep", `{"any":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, []string{"body"}},
		{"null body", `null`, []string{"body"}},
		{"null body in white space", " null\n", []string{"body"}},
		{"invalid UTF-8", "{\"note\":\"\xff\"}", []string{"body"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v target
			err := domain.DecodeStrict(strings.NewReader(tc.body), &v)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("DecodeStrict(%s): %v", tc.body, err)
				}
				return
			}
			if diff := cmp.Diff(tc.want, fieldPaths(err)); diff != "" {
				t.Errorf("field paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestDecodeStrictReadError(t *testing.T) {
	t.Parallel()
	errTooLarge := errors.New("body too large")
	r := io.MultiReader(strings.NewReader(`{"slug":`), errReader{errTooLarge})
	var s domain.EstablishmentInput
	err := domain.DecodeStrict(r, &s)
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("DecodeStrict: got %v, want the read error", err)
	}
	if fes := domain.FieldErrors(err); len(fes) != 0 {
		t.Errorf("DecodeStrict: got field errors %v, want none for a read error", fes)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestFieldErrors(t *testing.T) {
	t.Parallel()
	a := &domain.FieldError{Field: "a", Reason: "bad"}
	b := &domain.FieldError{Field: "b", Reason: "bad"}
	err := fmt.Errorf("import: %w", errors.Join(a, fmt.Errorf("wrapped: %w", b), errors.New("other")))
	got := domain.FieldErrors(err)
	if diff := cmp.Diff([]*domain.FieldError{a, b}, got); diff != "" {
		t.Errorf("FieldErrors mismatch (-want +got):\n%s", diff)
	}
	if got := domain.FieldErrors(nil); len(got) != 0 {
		t.Errorf("FieldErrors(nil): got %v, want none", got)
	}
	if got, want := a.Error(), "a: bad"; got != want {
		t.Errorf("Error(): got %q, want %q", got, want)
	}
}

// An English text of white space or invisible characters is no translation: readers get the
// French text, as for a missing one.
func TestBlankTranslationIsNoTranslation(t *testing.T) {
	t.Parallel()
	const item0 = "menu_types[0].versions[0].sections[0].items[0]"
	body := mutate(t, readFile(t, basePath), set(item0+".name.en", "  \u200b"))
	e := imported(t, baseSlug, body)
	name := e.MenuTypes[0].Versions[0].Sections[0].Items[0].Name
	if name.EN != "" || name.In(domain.LocaleEN) != name.FR {
		t.Errorf("item name: got %+v, want no English text and the French one in English", name)
	}
}

// Ranges that end the same day or, overnight, the next one (Sunday's next day being Monday).
func TestOpeningRangeEnds(t *testing.T) {
	t.Parallel()
	for _, r := range []map[string]any{
		{"open_day": "dimanche", "open_time": "19:00", "close_day": "lundi", "close_time": "00:30"},
		{"open_day": "lundi", "open_time": "12:00", "close_day": "lundi", "close_time": "14:30"},
		{"open_day": "lundi", "open_time": "00:00", "close_day": "mardi", "close_time": "00:00"},
		{"open_day": "lundi", "open_time": "12:00", "close_day": nil, "close_time": "14:30"},
	} {
		body := mutate(t, readFile(t, basePath), set("business_hours", []any{r}))
		if _, err := importBody(t, domain.New(baseSlug), body, testKey(1)); err != nil {
			t.Errorf("range %v: %v", r, err)
		}
	}
}

// A one-day exception has no end_date: one given equal to its start_date is dropped at import, so
// that the establishment holds, exports and serves it as a one-day exception, and importing it
// either way again changes nothing.
func TestImportOneDayExceptionHasNoEndDate(t *testing.T) {
	t.Parallel()
	base := readFile(t, basePath)
	start := "2026-12-24"
	oneDay := mutate(t, base, set("special_hours[0].start_date", start), set("special_hours[0].end_date", start))
	est := imported(t, baseSlug, oneDay)
	if len(est.SpecialHours) == 0 || est.SpecialHours[0].EndDate != nil {
		t.Fatalf("special hours: got %+v, want the first without end_date", est.SpecialHours)
	}
	if got := est.Export().SpecialHours[0].EndDate; got != nil {
		t.Errorf("exported end_date: got %q, want none", *got)
	}
	for name, body := range map[string][]byte{
		"end_date equal to start_date": oneDay,
		"end_date null":                mutate(t, base, set("special_hours[0].start_date", start), set("special_hours[0].end_date", nil)),
	} {
		if res, err := importBody(t, est, body, testKey(2)); err != nil || len(res.Events) != 0 {
			t.Errorf("import again with %s: got events %v (%v), want none", name, eventTypes(res.Events), err)
		}
	}
}

// A one-day exception recorded with an end_date equal to its start_date, as imports recorded
// before they dropped it, is held, exported and compared without it.
func TestRecordedOneDayExceptionHasNoEndDate(t *testing.T) {
	t.Parallel()
	est := imported(t, baseSlug, readFile(t, basePath))
	day := domain.LocalDate{Year: 2026, Month: 12, Day: 24}
	est.Apply(domain.SpecialHoursChanged{SpecialHours: []domain.SpecialHours{{StartDate: day, EndDate: &day, Closed: true}}})
	if got := est.SpecialHours[0].EndDate; got != nil {
		t.Fatalf("held end_date %v, want none", got)
	}
	exported := est.Export()
	if got := exported.SpecialHours[0].EndDate; got != nil {
		t.Errorf("exported end_date %q, want none", *got)
	}
	if res, err := est.Import(exported, testKey(2)); err != nil || len(res.Events) != 0 {
		t.Errorf("import of the export: events %v (%v), want none", eventTypes(res.Events), err)
	}
}

// BenchmarkImportDemo validates the demo's document into events, as an import or a PUT of a new
// establishment does after decoding it.
func BenchmarkImportDemo(b *testing.B) {
	s, err := domain.ParseInput(bytes.NewReader(readFile(b, demoPath)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.New(demoSlug).Import(s, testKey(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImportDemoUnchanged imports the demo's document into the establishment it made: the
// diff of a PUT or an import that finds everything as it was.
func BenchmarkImportDemoUnchanged(b *testing.B) {
	s, err := domain.ParseInput(bytes.NewReader(readFile(b, demoPath)))
	if err != nil {
		b.Fatal(err)
	}
	e := imported(b, demoSlug, readFile(b, demoPath))
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.Import(s, testKey(1))
		if err != nil || len(res.Events) != 0 {
			b.Fatal(err, res.Events)
		}
	}
}
