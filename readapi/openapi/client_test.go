package openapi_test

import (
	"testing"

	"github.com/opencarte/publisher/readapi/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// clientConfig is the generator configuration the README shows. skip-prune keeps the components
// only the webhooks use: the generator's pruning drops them while still emitting the webhook
// types that name them, which then do not compile.
const clientConfig = `package: opencarte
generate:
  client: true
  models: true
output-options:
  skip-prune: true
output: opencarte/client.gen.go
`

// TestGeneratedGoClientCompiles generates a Go client from the description served, with
// openapitest.OAPICodegen, and compiles it.
func TestGeneratedGoClientCompiles(t *testing.T) {
	t.Parallel()
	openapitest.CompileGoClient(t, openapi.YAML(), clientConfig, "opencarte/client.gen.go")
}
