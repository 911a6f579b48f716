package openapitest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
)

// CheckValid fails tb unless data, a description in YAML or JSON, loads and validates as
// OpenAPI 3.1 (its examples against their schemas included), at info.version 1.0.0.
func CheckValid(tb testing.TB, data []byte) {
	tb.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		tb.Fatalf("load: %v", err)
	}
	// Validate checks the examples against their schemas too (on by default).
	if err := doc.Validate(loader.Context, openapi3.EnableMultiError()); err != nil {
		tb.Fatalf("validate: %v", err)
	}
	if got, want := doc.OpenAPI, "3.1.0"; got != want {
		tb.Errorf("openapi: got %q, want %q", got, want)
	}
	if got, want := doc.Info.Version, "1.0.0"; got != want {
		tb.Errorf("info.version: got %q, want %q", got, want)
	}
	if !doc.IsOpenAPI31OrLater() {
		tb.Error("the description is not read as OpenAPI 3.1")
	}
}

// Generated is a JSON file made from the source of a description: Name, in the test's
// directory, must hold Want, and is embedded as Got.
type Generated struct {
	Name      string
	Want, Got []byte
}

// CheckGenerated fails tb for each file that does not hold what it is made of, or is not valid
// JSON, naming rewrite, the command that rewrites them; with update, it rewrites them instead.
func CheckGenerated(tb testing.TB, update bool, rewrite string, files ...Generated) {
	tb.Helper()
	for _, f := range files {
		if update {
			if err := os.WriteFile(f.Name, f.Want, 0o644); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if !bytes.Equal(f.Got, f.Want) {
			tb.Errorf("%s is not made from its source; run %s\n%s", f.Name, rewrite, cmp.Diff(string(f.Want), string(f.Got)))
		}
		if !json.Valid(f.Got) {
			tb.Errorf("%s is not valid JSON", f.Name)
		}
	}
}
