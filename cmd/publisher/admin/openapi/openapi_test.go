package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

var update = flag.Bool("update", false, "rewrite openapi.json and import.schema.json from openapi.yaml")

func TestDescriptionIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"yaml", openapi.YAML()},
		{"json", openapi.JSON()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loader := openapi3.NewLoader()
			doc, err := loader.LoadFromData(tc.data)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			// Validate checks the examples against their schemas too (on by default).
			if err := doc.Validate(loader.Context, openapi3.EnableMultiError()); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got, want := doc.OpenAPI, "3.1.0"; got != want {
				t.Errorf("openapi: got %q, want %q", got, want)
			}
			if !doc.IsOpenAPI31OrLater() {
				t.Error("the description is not read as OpenAPI 3.1")
			}
		})
	}
}

// TestGeneratedFilesAreTheYAMLConverted keeps openapi.json the JSON form of openapi.yaml, and
// import.schema.json its ImportDocument schema standing alone; go test -update rewrites both.
func TestGeneratedFilesAreTheYAMLConverted(t *testing.T) {
	description, err := openapitest.YAMLToJSON(openapi.YAML())
	if err != nil {
		t.Fatal(err)
	}
	schema, err := importSchema(openapi.YAML())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name      string
		want, got []byte
	}{
		{"openapi.json", description, openapi.JSON()},
		{"import.schema.json", schema, openapi.ImportSchema()},
	} {
		if *update {
			if err := os.WriteFile(f.name, f.want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !bytes.Equal(f.got, f.want) {
			t.Errorf("%s is not made from openapi.yaml; run go test ./cmd/publisher/admin/openapi -update\n%s",
				f.name, cmp.Diff(string(f.want), string(f.got)))
		}
		if !json.Valid(f.got) {
			t.Errorf("%s is not valid JSON", f.name)
		}
	}
}
