package openapi_test

import (
	"flag"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

var update = flag.Bool("update", false, "rewrite openapi.json and import.schema.json from openapi.yaml")

func TestDescriptionIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	t.Run("yaml", func(t *testing.T) { openapitest.CheckValid(t, openapi.YAML()) })
	t.Run("json", func(t *testing.T) { openapitest.CheckValid(t, openapi.JSON()) })
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
	openapitest.CheckGenerated(t, *update, "go test ./cmd/publisher/admin/openapi -update",
		openapitest.Generated{Name: "openapi.json", Want: description, Got: openapi.JSON()},
		openapitest.Generated{Name: "import.schema.json", Want: schema, Got: openapi.ImportSchema()})
}
