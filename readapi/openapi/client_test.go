package openapi_test

import (
	"testing"

	"github.com/opencarte/publisher/readapi/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// clientConfig is the generator configuration the README shows: the generator's defaults, with
// nothing but the package, what to generate and where. The generator then drops the components
// no path refers to, which the description's webhooks therefore do not use.
const clientConfig = `package: opencarte
generate:
  client: true
  models: true
output: opencarte/client.gen.go
`

// TestGeneratedGoClientCompiles generates a Go client from the description served, with
// openapitest.OAPICodegen, and compiles it.
func TestGeneratedGoClientCompiles(t *testing.T) {
	t.Parallel()
	openapitest.CompileGoClient(t, openapi.YAML(), clientConfig, "opencarte/client.gen.go")
}
