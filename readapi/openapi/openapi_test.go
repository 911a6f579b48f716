package openapi_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/readapi/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

var update = flag.Bool("update", false, "rewrite openapi.json from openapi.yaml")

func TestDescriptionIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	t.Run("yaml", func(t *testing.T) { openapitest.CheckValid(t, openapi.YAML()) })
	t.Run("json", func(t *testing.T) { openapitest.CheckValid(t, openapi.JSON()) })
}

// TestJSONIsTheYAMLConverted keeps openapi.json the JSON form of openapi.yaml, key order kept;
// go test -update rewrites it.
func TestJSONIsTheYAMLConverted(t *testing.T) {
	want, err := openapitest.YAMLToJSON(openapi.YAML())
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckGenerated(t, *update, "go test ./readapi/openapi -update",
		openapitest.Generated{Name: "openapi.json", Want: want, Got: openapi.JSON()})
}

// TestPathsAndOperations pins the surface the description covers: the routes the service answers,
// GET only (HEAD being described once, in the introduction), and the webhook.
func TestPathsAndOperations(t *testing.T) {
	t.Parallel()
	doc := load(t)
	want := map[string]string{
		"/api/v1/establishments/{slug}":                        "getEstablishment",
		"/api/v1/establishments/{slug}/hours":                  "getOpeningHours",
		"/api/v1/establishments/{slug}/jsonld":                 "getJSONLD",
		"/api/v1/establishments/{slug}/menus":                  "listMenus",
		"/api/v1/establishments/{slug}/menus/{menu_type_slug}": "getMenu",
		"/r/master_menu":                                       "redirectMasterMenu",
		"/r/menus":                                             "redirectMenu",
		"/files/{name}":                                        "getFile",
		"/healthz":                                             "getHealth",
		"/readyz":                                              "getReadiness",
		openapi.YAMLPath:                                       "getOpenAPIYAML",
		openapi.JSONPath:                                       "getOpenAPIJSON",
		"/docs":                                                "getReference",
		"/docs/{file}":                                         "getReferenceFile",
	}
	got := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if method != http.MethodGet && method != http.MethodHead {
				t.Errorf("%s %s: only GET and HEAD operations are described", method, path)
			}
		}
		if item.Get == nil || item.Head == nil {
			t.Errorf("%s: want a GET and a HEAD operation", path)
			continue
		}
		got[path] = item.Get.OperationID
		// HEAD answers as GET does, without a body.
		if item.Head.OperationID == "" || item.Head.OperationID == item.Get.OperationID {
			t.Errorf("HEAD %s: operation id %q, want one of its own", path, item.Head.OperationID)
		}
		if !cmp.Equal(item.Get.Security, item.Head.Security) {
			t.Errorf("HEAD %s: security %v, want GET's %v", path, item.Head.Security, item.Get.Security)
		}
		if getStatuses, headStatuses := slices.Sorted(maps.Keys(item.Get.Responses.Map())), slices.Sorted(maps.Keys(item.Head.Responses.Map())); !slices.Equal(getStatuses, headStatuses) {
			t.Errorf("HEAD %s: statuses %v, want GET's %v", path, headStatuses, getStatuses)
		}
		for status, r := range item.Head.Responses.Map() {
			if len(r.Value.Content) > 0 {
				t.Errorf("HEAD %s: the %s answer has a body", path, status)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	for path, item := range doc.Paths.Map() {
		if item.Get == nil {
			continue
		}
		if !strings.HasPrefix(path, "/api/") {
			if item.Get.Security == nil || len(*item.Get.Security) > 0 {
				t.Errorf("GET %s needs no key: want security: []", path)
			}
			continue
		}
		if item.Get.Security == nil || len(*item.Get.Security) != 1 || (*item.Get.Security)[0]["apiKey"] == nil {
			t.Errorf("GET %s: want the apiKey security requirement", path)
		}
		for _, status := range []int{200, 304, 401, 404, 405, 412, 429, 500} {
			if item.Get.Responses.Status(status) == nil {
				t.Errorf("GET %s: no %d response", path, status)
			}
		}
	}
	for name, item := range doc.Webhooks {
		if op := item.Post; op == nil || op.Security == nil || len(*op.Security) > 0 {
			t.Errorf("webhook %s: want a POST with security: []", name)
		}
	}
	scheme := doc.Components.SecuritySchemes["apiKey"].Value
	if scheme.Type != "apiKey" || scheme.In != "header" || scheme.Name != "X-Api-Key" {
		t.Errorf("apiKey scheme: got %s in %s named %s, want apiKey in header named X-Api-Key", scheme.Type, scheme.In, scheme.Name)
	}
}

// TestLocaleIsNotAnEnum: an unknown locale is served as fr, so the description must not reject it.
func TestLocaleIsNotAnEnum(t *testing.T) {
	t.Parallel()
	doc := load(t)
	want := map[string]bool{
		"/api/v1/establishments/{slug}/menus":                  true,
		"/api/v1/establishments/{slug}/menus/{menu_type_slug}": true,
		"/api/v1/establishments/{slug}/jsonld":                 true,
		"/r/menus":                                             true,
	}
	for path, item := range doc.Paths.Map() {
		p := item.Get.Parameters.GetByInAndName("query", "locale")
		if (p != nil) != want[path] {
			t.Errorf("GET %s: has a locale parameter %v, want %v", path, p != nil, want[path])
		}
		if p == nil {
			continue
		}
		if p.Required {
			t.Errorf("GET %s: locale is required", path)
		}
		for _, v := range []string{"fr", "en", "de", "es", "", "EN"} {
			if err := p.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("GET %s: locale %q rejected: %v", path, v, err)
			}
		}
	}
}

// goldenSchema names the schema of a golden document of projections/testdata, or "" for a file
// that is not a served document.
func goldenSchema(name string) string {
	switch {
	case name == "establishment.json":
		return "Establishment"
	case name == "hours.json":
		return "OpeningHours"
	case strings.HasPrefix(name, "menus.") && strings.HasSuffix(name, ".json"):
		return "MenuList"
	case strings.HasPrefix(name, "menu.") && strings.HasSuffix(name, ".json"):
		return "MenuDetail"
	}
	return ""
}

func TestGoldenDocumentsConform(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "projections", "testdata", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, path := range files {
		schema := goldenSchema(filepath.Base(path))
		if schema == "" {
			continue
		}
		seen[schema]++
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := openapitest.ValidateSchema(schema, body); err != nil {
				t.Errorf("%s does not conform to %s: %v", path, schema, err)
			}
		})
	}
	for _, schema := range []string{"Establishment", "OpeningHours", "MenuList", "MenuDetail"} {
		if seen[schema] == 0 {
			t.Errorf("no golden document for %s", schema)
		}
	}
}

// TestSchemasRejectDrift changes golden documents in the ways the code could drift from the
// description, and wants each change rejected.
func TestSchemasRejectDrift(t *testing.T) {
	t.Parallel()
	const (
		establishment = "demo/establishment.json"
		bare          = "uploaded-only/establishment.json"
		hours         = "demo/hours.json"
		openEnded     = "dated/hours.json"
		menus         = "demo/menus.all.json"
		generated     = "demo/menu.la-carte.all.json"
		fixedPrice    = "demo/menu.menu-du-jour.fr.json"
		uploaded      = "demo/menu.vins.all.json"
	)
	for _, tc := range []struct {
		name, golden, schema string
		change               func(doc map[string]any)
	}{
		{"extra key at the root", establishment, "Establishment", set("opening_soon", true)},
		{"extra key in contact", establishment, "Establishment", set("contact/fax", "+33100000000")},
		{"extra key in location", establishment, "Establishment", set("location/altitude", 35.0)},
		{"missing key", establishment, "Establishment", del("logo_url")},
		{"missing null key", bare, "Establishment", del("description")},
		{"missing deprecated key", establishment, "Establishment", del("category")},
		{"missing nested key", bare, "Establishment", del("contact/phone_number")},
		{"null name", establishment, "Establishment", set("name", nil)},
		{"null business_type", establishment, "Establishment", set("business_type", nil)},
		{"unknown business_type", establishment, "Establishment", set("business_type", "food_truck")},
		{"language en", establishment, "Establishment", set("language", "en")},
		{"content_revision as a string", establishment, "Establishment", set("content_revision", "1")},
		{"content_revision zero", establishment, "Establishment", set("content_revision", 0.0)},
		{"content_revision fractional", establishment, "Establishment", set("content_revision", 1.5)},
		{"latitude as a string", establishment, "Establishment", set("location/latitude", "48.8799")},
		{"latitude out of range", establishment, "Establishment", set("location/latitude", 91.0)},
		{"relative website_url", establishment, "Establishment", set("website_url", "/carte")},
		{"local phone number", establishment, "Establishment", set("contact/phone_number", "0142000000")},

		{"extra key in a range", hours, "OpeningHours", set("business_hours/0/note", "midi")},
		{"extra key in an exception", hours, "OpeningHours", set("special_hours_coming/0/reason", "Noël")},
		{"missing summary", hours, "OpeningHours", del("business_hours_summary")},
		{"missing close_day", openEnded, "OpeningHours", del("business_hours/6/close_day")},
		{"missing end_date", hours, "OpeningHours", del("special_hours_coming/0/end_date")},
		{"open_day in English", hours, "OpeningHours", set("business_hours/0/open_day", "monday")},
		{"capitalised open_day", hours, "OpeningHours", set("business_hours/0/open_day", "Mardi")},
		{"close_day in English", hours, "OpeningHours", set("business_hours/0/close_day", "tuesday")},
		{"null open_day", hours, "OpeningHours", set("business_hours/0/open_day", nil)},
		{"time 24:00", hours, "OpeningHours", set("business_hours/0/open_time", "24:00")},
		{"time without a leading zero", hours, "OpeningHours", set("business_hours/0/close_time", "9:30")},
		{"time with seconds", hours, "OpeningHours", set("special_hours_coming/0/open_time", "19:00:00")},
		{"date in French order", hours, "OpeningHours", set("special_hours_coming/0/start_date", "24/12/2026")},
		{"month 13", hours, "OpeningHours", set("special_hours_coming/1/end_date", "2026-13-01")},
		{"closed as a string", hours, "OpeningHours", set("special_hours_coming/0/closed", "false")},
		{"null business_hours", hours, "OpeningHours", set("business_hours", nil)},

		{"extra key in a list item", menus, "MenuList", set("menus/0/sections", []any{})},
		{"extra key in a menu type", menus, "MenuList", set("menus/0/menu_type/position", 1.0)},
		{"missing master_menu_url", menus, "MenuList", del("master_menu_url")},
		{"missing reference_date", menus, "MenuList", del("menus/2/reference_date")},
		{"unknown kind", menus, "MenuList", set("menus/0/menu_type/kind", "buffet")},
		{"unknown source", menus, "MenuList", set("menus/0/menu_type/source", "scanned")},
		{"invalid menu type slug", menus, "MenuList", set("menus/0/menu_type/slug", "La Carte")},
		{"unknown language_scope", menus, "MenuList", set("menus/0/assets/0/language_scope", "de")},
		{"asset without a page", menus, "MenuList", set("menus/0/assets/0/urls", []any{})},
		{"extra key in an asset", menus, "MenuList", set("menus/0/assets/0/size", 1024.0)},
		{"relative master_menu_url", menus, "MenuList", set("master_menu_url", "carte.pdf")},
		{"relative page url", menus, "MenuList", set("menus/0/assets/0/urls/0", "//cdn.example.fr/a.jpg")},
		{"reference_date month 13", menus, "MenuList", set("menus/0/reference_date", "2026-13-22")},
		{"reference_date with a time", menus, "MenuList", set("menus/0/reference_date", "2026-09-22T00:00:00Z")},
		{"null menu_type", menus, "MenuList", set("menus/0/menu_type", nil)},
		{"empty menu type name", menus, "MenuList", set("menus/0/menu_type/name", "")},

		{"price as a number", generated, "MenuDetail", set("sections/0/items/0/price", 12.5)},
		{"price with one decimal", generated, "MenuDetail", set("sections/0/items/0/price", "12.5")},
		{"price with a comma", generated, "MenuDetail", set("sections/0/items/0/price", "12,50")},
		{"price with a leading zero", generated, "MenuDetail", set("sections/0/items/0/price", "012.50")},
		{"null price a la carte", generated, "MenuDetail", set("sections/0/items/0/price", nil)},
		{"price of an item not a la carte", fixedPrice, "MenuDetail", set("sections/0/items/0/price", "14.00")},
		{"extra key in an item", generated, "MenuDetail", set("sections/0/items/0/allergens", []any{})},
		{"extra key in a section", generated, "MenuDetail", set("sections/0/id", 1.0)},
		{"missing item description", generated, "MenuDetail", del("sections/0/items/1/description")},
		{"missing chef_recommendation", generated, "MenuDetail", del("sections/0/items/0/chef_recommendation")},
		{"missing sections", generated, "MenuDetail", del("sections")},
		{"item id as a string", generated, "MenuDetail", set("sections/0/items/0/id", "101")},
		{"item id zero", generated, "MenuDetail", set("sections/0/items/0/id", 0.0)},
		{"vegan as a string", generated, "MenuDetail", set("sections/0/items/0/vegan", "no")},
		{"fractional position", generated, "MenuDetail", set("sections/0/position", 1.5)},
		{"null sections", uploaded, "MenuDetail", set("sections", nil)},
		{"sections of an uploaded menu", uploaded, "MenuDetail", set("sections", []any{
			map[string]any{"name": "Rouges", "position": 1.0, "items": []any{}},
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := readGolden(t, tc.golden)
			if err := openapitest.ValidateSchema(tc.schema, marshal(t, doc)); err != nil {
				t.Fatalf("the unchanged %s does not conform to %s: %v", tc.golden, tc.schema, err)
			}
			tc.change(doc)
			body := marshal(t, doc)
			if err := openapitest.ValidateSchema(tc.schema, body); err == nil {
				t.Errorf("%s conforms to %s, want it rejected: %s", tc.name, tc.schema, body)
			}
		})
	}
}

// TestNullableKeysAcceptNull sets every "T | null" key of the specification to null, one at a
// time, and wants the document accepted.
func TestNullableKeysAcceptNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ golden, schema, path string }{
		{"demo/establishment.json", "Establishment", "description"},
		{"demo/establishment.json", "Establishment", "public_category"},
		{"demo/establishment.json", "Establishment", "category"},
		{"demo/establishment.json", "Establishment", "website_url"},
		{"demo/establishment.json", "Establishment", "menu_url"},
		{"demo/establishment.json", "Establishment", "logo_url"},
		{"demo/establishment.json", "Establishment", "contact/email"},
		{"demo/establishment.json", "Establishment", "contact/phone_number"},
		{"demo/establishment.json", "Establishment", "location/address"},
		{"demo/establishment.json", "Establishment", "location/latitude"},
		{"demo/establishment.json", "Establishment", "location/longitude"},
		{"demo/hours.json", "OpeningHours", "business_hours_summary"},
		{"demo/hours.json", "OpeningHours", "business_hours/0/close_day"},
		{"demo/hours.json", "OpeningHours", "business_hours/0/close_time"},
		{"demo/hours.json", "OpeningHours", "special_hours_coming/1/end_date"},
		{"demo/hours.json", "OpeningHours", "special_hours_coming/0/open_time"},
		{"demo/hours.json", "OpeningHours", "special_hours_coming/0/close_time"},
		{"demo/menus.all.json", "MenuList", "master_menu_url"},
		{"demo/menus.all.json", "MenuList", "menus/0/reference_date"},
		{"demo/menu.la-carte.all.json", "MenuDetail", "reference_date"},
		{"demo/menu.la-carte.all.json", "MenuDetail", "sections/0/items/0/description"},
		{"demo/menu.menu-du-jour.all.json", "MenuDetail", "sections/0/items/0/price"},
	} {
		t.Run(tc.golden+"/"+tc.path, func(t *testing.T) {
			t.Parallel()
			doc := readGolden(t, tc.golden)
			set(tc.path, nil)(doc)
			if err := openapitest.ValidateSchema(tc.schema, marshal(t, doc)); err != nil {
				t.Errorf("%s null rejected: %v", tc.path, err)
			}
		})
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"error":"Unauthorized"}`,
		`{"error":"Not found"}`,
		`{"error":"Rate limit exceeded"}`,
		`{"error":"Method not allowed"}`,
		`{"error":"Internal server error"}`,
		`{"error":"Not ready"}`,
		`{"error":"Unprocessable","details":["price: want two decimals"]}`,
		`{"error":"Unprocessable","details":[]}`,
	} {
		if err := openapitest.ValidateSchema("Error", []byte(body)); err != nil {
			t.Errorf("%s rejected: %v", body, err)
		}
	}
	for _, body := range []string{
		`{}`,
		`{"error":""}`,
		`{"error":401}`,
		`{"error":null}`,
		`{"error":"Not found","status":404}`,
		`{"error":"Not found","details":"slug"}`,
		`{"error":"Not found","details":[1]}`,
		`{"message":"Not found"}`,
		`"Not found"`,
	} {
		if err := openapitest.ValidateSchema("Error", []byte(body)); err == nil {
			t.Errorf("%s accepted, want it rejected", body)
		}
	}
}

func TestWebhookPayloads(t *testing.T) {
	t.Parallel()
	doc := load(t)
	for _, event := range []string{"establishment.content_updated", "establishments.content_updated", "webhook.ping"} {
		hook := doc.Webhooks[event]
		if hook == nil || hook.Post == nil {
			t.Errorf("no POST webhook %s", event)
			continue
		}
		op := hook.Post
		media := op.RequestBody.Value.Content.Get("application/json")
		if media == nil || media.Schema == nil {
			t.Errorf("%s: no JSON body described", event)
			continue
		}
		if example := marshal(t, media.Example); openapitest.ValidateWebhook(event, example) != nil {
			t.Errorf("%s: the example %s does not conform", event, example)
		}
		for _, name := range []string{"X-Service-Signature", "webhook-id", "webhook-timestamp", "webhook-signature"} {
			if p := op.Parameters.GetByInAndName("header", name); p == nil || !p.Required {
				t.Errorf("%s: header field %s is not described as required", event, name)
			}
		}
	}

	// The body the webhook package writes: id, type, timestamp, then data.
	valid := func() map[string]any {
		return map[string]any{
			"id":        "msg_18797a4b1c2d3e4f0a1b2c3d4e5f6a7b",
			"type":      "establishment.content_updated",
			"timestamp": time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC).Format(time.RFC3339Nano),
			"data": map[string]any{
				"establishment":    "chez-marcel",
				"content_revision": 42.0,
				"resources":        []any{"establishment", "hours", "menus", "menus/la-carte"},
			},
		}
	}
	if err := openapitest.ValidateWebhook("establishment.content_updated", marshal(t, valid())); err != nil {
		t.Fatalf("a valid event rejected: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(map[string]any)
	}{
		{"extra key", set("content", map[string]any{})},
		{"extra key in data", set("data/endpoint_id", "website")},
		{"missing id", del("id")},
		{"missing timestamp", del("timestamp")},
		{"missing data", del("data")},
		{"missing revision", del("data/content_revision")},
		{"missing resources", del("data/resources")},
		{"ping type", set("type", "webhook.ping")},
		{"other type", set("type", "establishment.deleted")},
		{"id of another form", set("id", "01JD4QK7M2X9V8T6R5P3N1B0CZ")},
		{"revision as a string", set("data/content_revision", "42")},
		{"revision zero", set("data/content_revision", 0.0)},
		{"invalid establishment", set("data/establishment", "Chez Marcel")},
		{"unknown resource", set("data/resources", []any{"photos"})},
		{"menu resource without a slug", set("data/resources", []any{"menus/"})},
		{"no resource", set("data/resources", []any{})},
		{"repeated resource", set("data/resources", []any{"hours", "hours"})},
		{"timestamp without a zone", set("timestamp", "2026-11-22T10:15:30")},
		{"timestamp as a number", set("timestamp", 1795342530.0)},
	} {
		event := valid()
		tc.change(event)
		if err := openapitest.ValidateWebhook("establishment.content_updated", marshal(t, event)); err == nil {
			t.Errorf("%s accepted, want it rejected", tc.name)
		}
	}

	ping := map[string]any{
		"id":        "msg_18797a4b1c2d3e4f9f8e7d6c5b4a3928",
		"type":      "webhook.ping",
		"timestamp": "2026-11-22T10:20:00Z",
		"data":      map[string]any{"establishment": "chez-marcel", "endpoint_id": "website"},
	}
	if err := openapitest.ValidateWebhook("webhook.ping", marshal(t, ping)); err != nil {
		t.Errorf("a valid ping rejected: %v", err)
	}
	set("data/content_revision", 42.0)(ping)
	if err := openapitest.ValidateWebhook("webhook.ping", marshal(t, ping)); err == nil {
		t.Error("a ping with a revision accepted, want it rejected")
	}
}

func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func readGolden(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "projections", "testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// set returns a change that sets the value at path, keys and indexes separated by slashes.
func set(path string, value any) func(map[string]any) {
	return func(doc map[string]any) {
		parent, last := walk(doc, path)
		switch p := parent.(type) {
		case map[string]any:
			p[last] = value
		case []any:
			p[index(last, len(p))] = value
		}
	}
}

// del returns a change that deletes the key at path.
func del(path string) func(map[string]any) {
	return func(doc map[string]any) {
		parent, last := walk(doc, path)
		p, ok := parent.(map[string]any)
		if !ok {
			panic(fmt.Sprintf("%s: not an object key", path))
		}
		if _, ok := p[last]; !ok {
			panic(fmt.Sprintf("%s: no such key", path))
		}
		delete(p, last)
	}
}

// walk returns the container of the last element of path, and that element's key or index.
func walk(doc map[string]any, path string) (any, string) {
	parts := strings.Split(path, "/")
	var cur any = doc
	for _, part := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[part]
			if !ok {
				panic(fmt.Sprintf("%s: no key %q", path, part))
			}
			cur = next
		case []any:
			cur = c[index(part, len(c))]
		default:
			panic(fmt.Sprintf("%s: %q is not in a container", path, part))
		}
	}
	return cur, parts[len(parts)-1]
}

func index(s string, n int) int {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= n {
		panic(fmt.Sprintf("index %q out of range [0, %d)", s, n))
	}
	return i
}

// Values the service sends validate against the description written with anyOf and formats, and
// values it never sends do not.
func TestAcceptedValuesConform(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden, schema, path string
		value                any
		valid                bool
	}{
		{"demo/hours.json", "OpeningHours", "business_hours/0/close_day", "dimanche", true},
		{"demo/hours.json", "OpeningHours", "business_hours/0/close_day", "sunday", false},
		{"demo/establishment.json", "Establishment", "location/latitude", 48.8799, true},
		{"demo/establishment.json", "Establishment", "location/latitude", 91.0, false},
	} {
		t.Run(fmt.Sprintf("%s/%s=%v", tc.golden, tc.path, tc.value), func(t *testing.T) {
			t.Parallel()
			doc := readGolden(t, tc.golden)
			set(tc.path, tc.value)(doc)
			err := openapitest.ValidateSchema(tc.schema, marshal(t, doc))
			if (err == nil) != tc.valid {
				t.Errorf("%s = %v: validation error %v, want valid %t", tc.path, tc.value, err, tc.valid)
			}
		})
	}
}

// TestWebhooksReferOnlyToComponentsThePathsUse keeps the description usable by client generators
// with their defaults: oapi-codegen drops every component that no path refers to, directly or
// through other components, yet generates the webhooks' types, which would then name types it
// dropped.
func TestWebhooksReferOnlyToComponentsThePathsUse(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	fromPaths := references(t, doc, doc["paths"])
	fromWebhooks := references(t, doc, doc["webhooks"])
	if !fromWebhooks["#/components/schemas/Slug"] {
		t.Errorf("the webhooks' references %v miss the slug their bodies name", slices.Sorted(maps.Keys(fromWebhooks)))
	}
	for _, ref := range slices.Sorted(maps.Keys(fromWebhooks)) {
		if !fromPaths[ref] {
			t.Errorf("the webhooks refer to %s, which no path uses: generators drop it", ref)
		}
	}
}

// references returns the components v refers to, directly or through the components it refers to.
func references(t *testing.T, doc map[string]any, v any) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && !seen[ref] {
				seen[ref] = true
				walk(resolve(t, doc, ref))
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return seen
}

// resolve returns the value a local reference ("#/components/schemas/Slug") points to.
func resolve(t *testing.T, doc map[string]any, ref string) any {
	t.Helper()
	pointer, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		t.Fatalf("%s: not a local reference", ref)
	}
	var cur any = doc
	for _, part := range strings.Split(pointer, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok || m[part] == nil {
			t.Fatalf("%s: nothing at %q", ref, part)
		}
		cur = m[part]
	}
	return cur
}
