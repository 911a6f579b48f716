package client

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

func TestImportRefusesUnknownInputs(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "shops.csv")
	if err := os.WriteFile(csv, []byte("slug,name\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"PUBLISHER_ADMIN_TOKEN": "unused"}[k] }
	for _, args := range [][]string{{csv}, {filepath.Join(dir, "missing.ndjson")}, {"--batch", "1001", csv}, {"--progress", "loud", csv}, {}} {
		if err := Import(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard, env); err == nil {
			t.Errorf("import %q: got no error", args)
		}
	}
}

func TestImportFlagsHaveEnvironmentTwins(t *testing.T) {
	env := map[string]string{
		"PUBLISHER_BATCH":          "7",
		"PUBLISHER_PARALLEL":       "3",
		"PUBLISHER_PROGRESS":       "plain",
		"PUBLISHER_PROGRESS_EVERY": "1s",
	}
	var cfg ImportConfig
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	cfg.register(fs)
	if err := envflag.Parse(fs, []string{"--parallel", "2"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Batch != 7 || cfg.Parallel != 2 || cfg.Progress.Mode != "plain" || cfg.Progress.Every != time.Second {
		t.Errorf("got %+v, want batch 7, parallel 2 from the command line, plain every 1s", cfg)
	}
	if err := cfg.check(); err != nil {
		t.Error(err)
	}
}
