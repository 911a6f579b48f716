package openapitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// OAPICodegen is the Go client generator whose output is checked, at the version the README
// names.
const OAPICodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// CompileGoClient generates a Go client from description with the generator configuration
// config, in a module of its own, as a client would, and vets it: it fails tb when the
// generator refuses the description or its code does not compile. config writes its output
// under the directory its output option names, which is made first. The generator and the
// runtime its code imports come through the Go module proxy, as every other module does.
func CompileGoClient(tb testing.TB, description []byte, config, output string) {
	tb.Helper()
	dir := tb.TempDir()
	for name, data := range map[string][]byte{
		"go.mod":       []byte("module example.com/client\n\ngo 1.26\n"),
		"config.yaml":  []byte(config),
		"openapi.yaml": description,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(output)), 0o755); err != nil {
		tb.Fatal(err)
	}
	run := func(args ...string) {
		tb.Helper()
		cmd := exec.CommandContext(tb.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	run("run", OAPICodegen, "-config", "config.yaml", "openapi.yaml")
	run("mod", "tidy")
	run("vet", "./...")
}
