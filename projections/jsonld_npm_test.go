//go:build npm

package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wrongJSONLD lists the documents of testdata/schemaorg/wrong, each wrong in a way both checks
// must refuse, with the JSON pointer check.mjs must report.
var wrongJSONLD = []struct{ name, pointer string }{
	// A property schema.org does not define, which @vocab alone would still turn into an IRI.
	{"misspelt-property", "/telephon"},
	// A type schema.org does not define.
	{"misspelt-type", "/hasMenu/0/hasMenuSection/0/hasMenuItem/0/offers/@type"},
	// A null, which expansion drops in silence, even in safe mode.
	{"null-value", "/openingHoursSpecification/0/closes"},
}

// TestJSONLDGoldensCheckWithSchemaOrg checks every JSON-LD golden, testdata/*/jsonld.*.json, with
// tools written elsewhere, at the versions testdata/schemaorg/package-lock.json pins; npm installs
// them from the registry, and nothing else goes to the network. check.mjs expands each golden with
// jsonld.js, in safe mode, against schema.org's context as published (release 30.0, kept in
// testdata/schemaorg), and wants every key kept with its values, every property and type a term
// of the context. tsc, in strict mode, type-checks each golden as an object literal of schema-dts'
// WithContext<T>, T its @type, so that literal types and excess properties are checked. Both
// checks must also refuse each document of testdata/schemaorg/wrong.
func TestJSONLDGoldensCheckWithSchemaOrg(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*", "jsonld.*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(goldens) == 0 {
		t.Fatal("no JSON-LD golden, testdata/*/jsonld.*.json (run go test ./projections -update)")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "schemaorg"))); err != nil {
		t.Fatal(err)
	}
	npmRun(t, dir, "npm", "ci", "--no-audit", "--no-fund")

	// jsonld.js: every golden passes, each wrong document fails where it is wrong. The script runs
	// from the installed copy, on paths relative to this package.
	check := filepath.Join(dir, "check.mjs")
	if out, err := node(t, check, goldens...); err != nil {
		t.Errorf("check.mjs: %v\n%s", err, out)
	}
	for _, w := range wrongJSONLD {
		path := filepath.Join("testdata", "schemaorg", "wrong", w.name+".json")
		out, err := node(t, check, path)
		if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) {
			t.Errorf("check.mjs %s: want a failure, got %v\n%s", path, err, out)
			continue
		}
		if want := path + ": " + w.pointer + ": "; !strings.Contains(string(out), want) {
			t.Errorf("check.mjs %s: want an offence at %s, got\n%s", path, w.pointer, out)
		}
	}

	// schema-dts: every golden type-checks, and each wrong document does not (@ts-expect-error
	// fails the run when no error follows it).
	generated := filepath.Join(dir, "generated")
	if err := os.Mkdir(generated, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		name := filepath.Base(filepath.Dir(g)) + "." + strings.TrimSuffix(filepath.Base(g), ".json") + ".ts"
		writeSchemaDTS(t, g, filepath.Join(generated, name), "")
	}
	for _, w := range wrongJSONLD {
		path := filepath.Join("testdata", "schemaorg", "wrong", w.name+".json")
		writeSchemaDTS(t, path, filepath.Join(generated, "wrong."+w.name+".ts"), "must not type-check, "+w.name)
	}
	npmRun(t, dir, filepath.Join(dir, "node_modules", ".bin", "tsc"), "--project", ".")
}

var schemaTypeName = regexp.MustCompile(`^[A-Z][A-Za-z]*$`)

// writeSchemaDTS writes to ts a module that declares the JSON-LD document of path as an object
// literal of schema-dts' WithContext<T>, T its @type. A non-empty expectError puts the declaration
// under a @ts-expect-error with that reason, on a single line so that the directive covers any
// error in it.
func writeSchemaDTS(t *testing.T, path, ts, expectError string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Type any `json:"@type"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	typ, ok := doc.Type.(string)
	if !ok || !schemaTypeName.MatchString(typ) {
		t.Fatalf("%s: @type %v is not the name of one schema.org type", path, doc.Type)
	}
	text = bytes.TrimSpace(text)
	var b bytes.Buffer
	fmt.Fprintf(&b, "import type { WithContext, %s } from \"schema-dts\";\n", typ)
	if expectError != "" {
		var compact bytes.Buffer
		if err := json.Compact(&compact, text); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		text = compact.Bytes()
		fmt.Fprintf(&b, "// @ts-expect-error: %s\n", expectError)
	}
	fmt.Fprintf(&b, "export const doc: WithContext<%s> = %s;\n", typ, text)
	if err := os.WriteFile(ts, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// node runs a Node.js script in this package's directory, and returns its output.
func node(t *testing.T, script string, args ...string) ([]byte, error) {
	t.Helper()
	return exec.CommandContext(t.Context(), "node", append([]string{script}, args...)...).CombinedOutput()
}

// npmRun runs a command of the Node.js tool chain in dir, and fails the test with its output when
// it fails.
func npmRun(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}
