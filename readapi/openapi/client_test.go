package openapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/opencarte/publisher/readapi/openapi"
)

// oapiCodegen is the Go client generator the README's client section names, at the version
// checked here.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

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

// TestGeneratedGoClientCompiles generates a Go client from the description served, in a module
// of its own, as a client would, and compiles it. The generator and the runtime its code imports
// come through the Go module proxy, as every other module does.
func TestGeneratedGoClientCompiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"go.mod":       []byte("module example.com/client\n\ngo 1.26\n"),
		"config.yaml":  []byte(clientConfig),
		"openapi.yaml": openapi.YAML(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "opencarte"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	run("run", oapiCodegen, "-config", "config.yaml", "openapi.yaml")
	run("mod", "tidy")
	run("vet", "./...")
}
