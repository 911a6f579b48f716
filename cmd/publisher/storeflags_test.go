package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// TestStoreFlagsFilesURL: the files URL stored wins, and a statement of --public-url or --http
// (on the command line or in the environment) must match it; with none stored, the statement or
// the default is used.
func TestStoreFlagsFilesURL(t *testing.T) {
	const stored = "http://localhost:8080"
	for name, c := range map[string]struct {
		args    []string
		env     map[string]string
		stored  string
		want    string
		refused string // what the refusal says, "" when accepted
	}{
		"nothing stated":            {stored: stored, want: stored},
		"the default stated":        {args: []string{"--http", "127.0.0.1:8080"}, stored: "http://127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		"a wildcard --http":         {args: []string{"--http", ":8080"}, stored: stored, want: stored},
		"--public-url with slash":   {args: []string{"--public-url", stored + "/"}, stored: stored, want: stored},
		"--public-url wins":         {args: []string{"--public-url", stored, "--http", "127.0.0.1:9"}, stored: stored, want: stored},
		"another --public-url":      {args: []string{"--public-url", "https://menus.example.com"}, stored: stored, refused: "--public-url https://menus.example.com: the projector renders uploaded files under http://localhost:8080, not https://menus.example.com:"},
		"another --http":            {args: []string{"--http", "127.0.0.1:9"}, stored: stored, refused: "--http 127.0.0.1:9: the projector renders uploaded files under http://localhost:8080, not http://127.0.0.1:9:"},
		"another --http in env":     {env: map[string]string{"PUBLISHER_HTTP": "127.0.0.1:9"}, stored: stored, refused: "--http 127.0.0.1:9:"},
		"none stored":               {want: "http://127.0.0.1:8080"},
		"none stored, --http":       {args: []string{"--http", "0.0.0.0:9"}, want: "http://localhost:9"},
		"none stored, --public-url": {args: []string{"--public-url", "https://menus.example.com/"}, want: "https://menus.example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("verify", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var s storeFlags
			s.register(fs, "NATS")
			if err := envflag.Parse(fs, c.args, func(k string) string { return c.env[k] }); err != nil {
				t.Fatal(err)
			}
			got, err := s.filesURL(c.stored)
			switch {
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("got %q, %v; want a refusal saying %q", got, err, c.refused)
			case c.refused == "" && (err != nil || got != c.want):
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
