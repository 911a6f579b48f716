package openapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// TestClosedListsAreTheDomains keeps every closed list of the description equal to the list the
// write side parses with, so that a value added there cannot go undescribed, and one removed
// cannot stay described.
func TestClosedListsAreTheDomains(t *testing.T) {
	t.Parallel()
	d, err := openapitest.New(openapi.YAML(), openapitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schemas := d.Doc().Components.Schemas
	property := func(schema, name string) *openapi3.Schema {
		t.Helper()
		ref := schemas[schema]
		if ref == nil {
			t.Fatalf("no schema %s", schema)
		}
		s := ref.Value
		if name != "" {
			p := s.Properties[name]
			if p == nil {
				t.Fatalf("no property %s.%s", schema, name)
			}
			s = p.Value
		}
		return s
	}
	var days []string
	for day := domain.Lundi; day <= domain.Dimanche; day++ {
		days = append(days, day.String())
	}
	for _, tc := range []struct {
		schema, name string
		want         []string
	}{
		{"ImportDocument", "business_type", domain.BusinessTypes},
		{"ImportDocument", "status", domain.Statuses},
		{"MenuTypeInput", "rotation", domain.Rotations},
		{"MenuTypeInput", "kind", domain.MenuKinds},
		{"MenuTypeInput", "source", domain.MenuSources},
		{"LanguageScope", "", domain.LanguageScopes},
		{"Weekday", "", days},
	} {
		var got []string
		for _, v := range property(tc.schema, tc.name).Enum {
			if s, ok := v.(string); ok { // null, where it is allowed, means the default
				got = append(got, s)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s.%s (-domain +description):\n%s", tc.schema, tc.name, diff)
		}
	}
}

// TestGeneratedGoClientCompiles generates a Go client from the description with the generator's
// defaults (no skip-prune), and compiles it.
func TestGeneratedGoClientCompiles(t *testing.T) {
	t.Parallel()
	const config = `package: publisheradmin
generate:
  client: true
  models: true
output: publisheradmin/client.gen.go
`
	openapitest.CompileGoClient(t, openapi.YAML(), config, "publisheradmin/client.gen.go")
}
