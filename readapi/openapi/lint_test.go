//go:build npm

package openapi_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDescriptionsLintClean lints the read and admin descriptions with Redocly CLI, at the
// version testdata/lint/package-lock.json pins, under the rules of testdata/lint/redocly.yaml:
// Redocly's strict recommended set, where any problem fails.
func TestDescriptionsLintClean(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "lint"))); err != nil {
		t.Fatal(err)
	}
	npm(t, dir, "npm", "ci", "--no-audit", "--no-fund")
	args := []string{"lint", "--config", "redocly.yaml"}
	for _, c := range typescriptClients {
		description, err := filepath.Abs(c.description)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, description)
	}
	t.Setenv("REDOCLY_TELEMETRY", "off") // nothing sent; the machines running it may be offline
	npm(t, dir, filepath.Join(dir, "node_modules", ".bin", "redocly"), args...)
}
