package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/opencarte/publisher/cmd/internal/sample"
	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/domain"
)

// compileImportSchema compiles the published import schema, asserting formats.
func compileImportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapi.ImportSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("import.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("import.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateDocument(s *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestImportSchemaAcceptsWhatTheServiceImports validates the demo establishment and the
// establishments the scale benchmark generates, which the write side imports.
func TestImportSchemaAcceptsWhatTheServiceImports(t *testing.T) {
	t.Parallel()
	s := compileImportSchema(t)
	demo, err := os.ReadFile(filepath.Join("..", "..", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateDocument(s, demo); err != nil {
		t.Errorf("demo.json: %v", err)
	}
	today := domain.LocalDate{Year: 2026, Month: 11, Day: 24}
	for i := range 300 {
		b, err := json.Marshal(sample.Establishment(7, i, today))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := domain.ParseInput(bytes.NewReader(b)); err != nil {
			t.Fatalf("generated establishment %d is refused by the write side: %v", i, err)
		}
		if err := validateDocument(s, b); err != nil {
			t.Fatalf("generated establishment %d: %v\n%s", i, err, b)
		}
	}
}

// TestImportSchemaRefusesWhatTheServiceRefuses changes one value of the demo establishment at a
// time: the write side refuses each, and so must the schema.
func TestImportSchemaRefusesWhatTheServiceRefuses(t *testing.T) {
	t.Parallel()
	s := compileImportSchema(t)
	demo, err := os.ReadFile(filepath.Join("..", "..", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(doc map[string]any)
	}{
		{"unknown business type", func(d map[string]any) { d["business_type"] = "pub" }},
		{"unknown status", func(d map[string]any) { d["status"] = "closed" }},
		{"no name", func(d map[string]any) { delete(d, "name") }},
		{"name of the wrong type", func(d map[string]any) { d["name"] = 42 }},
		{"unknown member", func(d map[string]any) { d["colour"] = "red" }},
		{"bad slug", func(d map[string]any) { d["slug"] = "Chez_Marcel" }},
		{"bad phone number", func(d map[string]any) { d["contact"].(map[string]any)["phone_number"] = "01 42 00 00 00" }},
		{"latitude out of range", func(d map[string]any) { d["location"].(map[string]any)["latitude"] = 91.0 }},
		{"unknown day", func(d map[string]any) { hours(d)[0].(map[string]any)["open_day"] = "monday" }},
		{"bad time", func(d map[string]any) { hours(d)[0].(map[string]any)["open_time"] = "12h00" }},
		{"unknown rotation", func(d map[string]any) { menuType(d)["rotation"] = "yearly" }},
		{"unknown kind", func(d map[string]any) { menuType(d)["kind"] = "buffet" }},
		{"menu type without web_delivery", func(d map[string]any) { delete(menuType(d), "web_delivery") }},
		{"item without id", func(d map[string]any) { delete(item(d), "id") }},
		{"item id of the wrong type", func(d map[string]any) { item(d)["id"] = "one" }},
		{"price with one decimal", func(d map[string]any) { item(d)["price"] = "12.5" }},
		{"a la carte without a price", func(d map[string]any) { item(d)["price"] = nil }},
		{"section name without French", func(d map[string]any) { section(d)["name"] = map[string]any{"en": "Starters"} }},
		{"master menu that is no URL", func(d map[string]any) { d["master_menu_url"] = "carte.pdf" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var doc map[string]any
			if err := json.Unmarshal(demo, &doc); err != nil {
				t.Fatal(err)
			}
			tc.change(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := domain.ParseInput(bytes.NewReader(b)); err == nil {
				t.Fatalf("the write side accepts it: the case is wrong")
			}
			if err := validateDocument(s, b); err == nil {
				t.Errorf("the schema accepts it")
			}
		})
	}
}

func hours(d map[string]any) []any { return d["business_hours"].([]any) }

func menuType(d map[string]any) map[string]any { return d["menu_types"].([]any)[0].(map[string]any) }

func section(d map[string]any) map[string]any {
	for _, mt := range d["menu_types"].([]any) {
		for _, v := range mt.(map[string]any)["versions"].([]any) {
			if sections, _ := v.(map[string]any)["sections"].([]any); len(sections) > 0 {
				return sections[0].(map[string]any)
			}
		}
	}
	panic("the demo establishment has no section")
}

// item is the first item of the first section, a la carte.
func item(d map[string]any) map[string]any {
	it := section(d)["items"].([]any)[0].(map[string]any)
	if it["a_la_carte"] != true {
		panic("the demo establishment's first item is not a la carte")
	}
	return it
}
