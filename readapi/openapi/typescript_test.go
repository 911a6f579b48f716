//go:build npm

package openapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// typescriptClients lists the descriptions whose TypeScript clients are checked, each by the
// name of its client, testdata/typescript/<name>.ts, which imports the types generated from the
// description into generated/<name>.ts. The description path is relative to this package.
var typescriptClients = []struct{ name, description string }{
	{"read", "openapi.yaml"},
	{"admin", "../../cmd/publisher/admin/openapi/openapi.yaml"},
}

// TestTypeScriptClientsTypeCheck generates the types of each description with openapi-typescript
// and type-checks in strict mode, with tsc, a client that calls the API with openapi-fetch, at
// the versions testdata/typescript/package-lock.json pins; npm installs them from the registry.
// Each client also holds calls that must not type-check (@ts-expect-error), so that types
// degraded to any fail the check.
func TestTypeScriptClientsTypeCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "typescript"))); err != nil {
		t.Fatal(err)
	}
	npm(t, dir, "npm", "ci", "--no-audit", "--no-fund")
	bin := filepath.Join(dir, "node_modules", ".bin")
	for _, c := range typescriptClients {
		description, err := filepath.Abs(c.description)
		if err != nil {
			t.Fatal(err)
		}
		npm(t, dir, filepath.Join(bin, "openapi-typescript"), description, "--output", filepath.Join("generated", c.name+".ts"))
	}
	npm(t, dir, filepath.Join(bin, "tsc"), "--project", ".")
}

// npm runs a command of the Node.js tool chain in dir, and fails the test with its output when it
// fails.
func npm(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}
