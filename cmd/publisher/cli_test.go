package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/projections/dockey"
)

func TestFlagsHaveEnvironmentTwins(t *testing.T) {
	env := map[string]string{
		"PUBLISHER_DATA_DIR":       "/srv/publisher",
		"PUBLISHER_HTTP":           "0.0.0.0:9000",
		"PUBLISHER_ROLES":          "api,projector",
		"PUBLISHER_CLOCK_INTERVAL": "1m",
		"PUBLISHER_DEMO":           "true",
	}
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.flags(fs)
	// The command line wins over the environment.
	if err := envflag.Parse(fs, []string{"--http", "127.0.0.1:9001"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/srv/publisher" || cfg.HTTPAddr != "127.0.0.1:9001" || !cfg.Demo || cfg.ClockEvery != time.Minute ||
		strings.Join(cfg.Roles, ",") != "api,projector" {
		t.Errorf("got %+v", cfg)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(envflag.Name(f.Name), "PUBLISHER_") || strings.ContainsAny(envflag.Name(f.Name), "-.") {
			t.Errorf("flag %s: twin %s", f.Name, envflag.Name(f.Name))
		}
	})
}

func TestBadEnvironmentIsNamed(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.flags(fs)
	err := envflag.Parse(fs, nil, func(k string) string {
		if k == "PUBLISHER_ROLES" {
			return "api,cook"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "PUBLISHER_ROLES") {
		t.Errorf("bad PUBLISHER_ROLES: got %v, want an error naming it", err)
	}
}

func TestImportAndAdminCommands(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	ctx := context.Background()
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL, "PUBLISHER_ADMIN_TOKEN": testAdminToken}[k]
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"slug": "bad-one", "name": "", "business_type": "nightclub"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"import", "demo.json", bad}, &out, &errOut, env)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 documents refused") {
		t.Errorf("import: got %v, want one failure", err)
	}
	if !strings.Contains(out.String(), `"api_key":"pk_`) {
		t.Errorf("import output: got %q, want the demo's new key", out.String())
	}
	if e := errOut.String(); !strings.Contains(e, "422") || !strings.Contains(e, "business_type") || !strings.Contains(e, "name: required") {
		t.Errorf("import errors: got %q, want a 422 naming name and business_type", e)
	}

	out.Reset()
	if err := run(ctx, []string{"admin", "list"}, &out, io.Discard, env); err != nil || !strings.Contains(out.String(), `"chez-marcel"`) {
		t.Errorf("admin list: got %v %q", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "regenerate-key", "chez-marcel"}, &out, io.Discard, env); err != nil || !strings.Contains(out.String(), `"api_key":"pk_`) {
		t.Errorf("admin regenerate-key: got %v %q", err, out.String())
	}
	if err := run(ctx, []string{"admin", "set-redirect", "chez-marcel", "maybe"}, io.Discard, io.Discard, env); err == nil {
		t.Errorf("set-redirect maybe: want an error")
	}
	if err := run(ctx, []string{"admin", "get", "nowhere"}, io.Discard, io.Discard, env); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("admin get unknown: got %v, want a 404", err)
	}
}

func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	demo, _ := os.ReadFile("demo.json")
	m.admin(t, "PUT", "/admin/v1/establishments/chez-marcel?wait=true", demo)
	var out, errOut bytes.Buffer
	// verify connects as the embedded server's user, found in the data directory.
	verifyArgs := []string{"verify", "--nats-url", m.NATS.ClientURL(), "--data-dir", dir, "--progress", "plain"}
	err := run(context.Background(), verifyArgs, &out, &errOut, func(string) string { return "" })
	if err != nil || !strings.Contains(out.String(), `"checked": 1`) || !strings.Contains(out.String(), `"different": 0`) ||
		!strings.Contains(out.String(), `"differences": []`) {
		t.Errorf("verify: got %v\n%s", err, out.String())
	}
	// The last progress line, then the summary with the rate.
	if !strings.Contains(errOut.String(), "verified 1 of 1 establishments (") || !strings.Contains(errOut.String(), "verify: 1 establishments checked up to sequence ") {
		t.Errorf("verify: stderr %q, want a progress line and the summary", errOut.String())
	}

	// A bundle altered behind the projector's back: verify names it and fails.
	e, err := m.Docs.Get(t.Context(), dockey.Key("chez-marcel"))
	if err != nil {
		t.Fatal(err)
	}
	var b dockey.Bundle
	if err := dockey.Decode(e.Value(), &b); err != nil || b.Status != dockey.StatusActive {
		t.Fatalf("the demo's bundle is not active: %v", err)
	}
	b.Status = dockey.StatusDraft
	altered, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Docs.Put(t.Context(), dockey.Key("chez-marcel"), altered); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run(context.Background(), append(verifyArgs, "--progress", "none"), &out, io.Discard, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "1 establishments differ from the log (1 checked)") {
		t.Errorf("verify of an altered bundle: got %v, want an error naming 1 of 1 checked", err)
	}
	if !strings.Contains(out.String(), `"different": 1`) || !strings.Contains(out.String(), `"slug": "chez-marcel"`) {
		t.Errorf("verify of an altered bundle: report %s, want chez-marcel listed", out.String())
	}
}

// runCLI runs the binary's command line as main does, and returns its exit status and outputs.
func runCLI(tb testing.TB, env map[string]string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code = cli(tb.Context(), args, &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

// --help, -h and help print the usage of every command and subcommand on stdout and exit 0,
// whatever else is on the line, without a token or a server.
func TestHelpOfEveryCommand(t *testing.T) {
	env := map[string]string{"PUBLISHER_DATA_DIR": t.TempDir(), "PUBLISHER_ADMIN_URL": "http://127.0.0.1:1"}
	lines := map[string][][]string{
		"usage: publisher <command> [args] [flags]\n":       {{"--help"}, {"-h"}, {"help"}, {"help", "--help"}, {"-help"}},
		"usage: publisher serve [flags]\n":                  {{"serve", "--help"}, {"help", "serve"}, {"serve", "--demo", "-h"}},
		"usage: publisher import PATH... [flags]\n":         {{"import", "--help"}, {"import", "a.ndjson", "-h"}, {"import", "--batch", "0", "--help"}},
		"usage: publisher admin <command> [args] [flags]\n": {{"admin", "--help"}, {"admin", "-h"}, {"help", "admin"}},
		"usage: publisher admin get SLUG [flags]\n":         {{"admin", "get", "--help"}, {"admin", "get", "chez-marcel", "-h"}, {"help", "admin", "get"}},
		"usage: publisher verify [flags]\n":                 {{"verify", "--help"}, {"verify", "-h"}},
		"usage: publisher rebuild [flags]\n":                {{"rebuild", "--help"}, {"rebuild", "--abandon", "-h"}},
		"usage: publisher version\n":                        {{"version", "--help"}, {"help", "version"}},
	}
	for _, name := range []string{"list", "activate", "enable-api", "set-redirect", "publish-version", "upload", "add-asset",
		"collect-files", "add-webhook", "webhooks", "deliveries", "ping", "redeliver", "rotate-secret", "enable-webhook", "status"} {
		lines["usage: publisher admin "+name] = [][]string{{"admin", name, "--help"}}
	}
	for want, cases := range lines {
		for _, args := range cases {
			code, stdout, stderr := runCLI(t, env, args...)
			if code != exitOK || !strings.HasPrefix(stdout, want) || stderr != "" {
				t.Errorf("%q: exit %d, stdout %.80q, stderr %q; want 0 and a usage starting %q", args, code, stdout, stderr, want)
			}
		}
	}
}

// A command line that cannot run exits 2 naming what is wrong, on stderr; a usage is printed
// once, and only when no command is given.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "publisher: no command given\n\nusage: publisher <command> [args] [flags]\n"},
		{[]string{"serv"}, "publisher: unknown command \"serv\" (did you mean \"serve\"?)\nRun 'publisher --help' for usage.\n"},
		{[]string{"deploy"}, "publisher: unknown command \"deploy\"\nRun 'publisher --help' for usage.\n"},
		{[]string{"help", "serv"}, "publisher: unknown command \"serv\" (did you mean \"serve\"?)\n"},
		{[]string{"--data-dir", "x", "serve"}, "publisher: flag --data-dir before the command: flags come after it"},
		{[]string{"serve", "--nope"}, "publisher: serve: unknown flag --nope\nRun 'publisher serve --help' for usage.\n"},
		{[]string{"verify", "--workers"}, "publisher: verify: flag --workers needs a value\n"},
		{[]string{"rebuild", "--workers", "many"}, `publisher: rebuild: invalid value "many" for --workers: parse error`},
		{[]string{"import", "--parallel", "0", "x.ndjson"}, "publisher: import: --parallel 0: want at least 1\n"},
		{[]string{"import"}, "publisher: import: no path given"},
		{[]string{"admin", "get"}, "publisher: admin get: want 1 argument (SLUG), got 0\nRun 'publisher admin get --help' for usage.\n"},
		{[]string{"admin", "gte", "x"}, `publisher: admin: unknown command "gte" (did you mean "get"?)`},
		{[]string{"admin"}, "publisher: admin: no command given\n\nusage: publisher admin <command> [args] [flags]\n"},
		{[]string{"version", "now"}, `publisher: version: takes no arguments, got ["now"]`},
		{[]string{"serve", "now"}, `publisher: serve: takes no arguments, got ["now"]`},
		{[]string{"serve", "--heap-floor-bytes", "-1"}, "publisher: serve: --heap-floor-bytes -1: want 0 to "},
		{[]string{"serve", "--change-retention", "30m"}, "publisher: serve: --change-retention 30m0s: want at least 1h0m0s"},
		{[]string{"serve", "--settings-link-lifetime", "2h"}, "publisher: serve: --settings-link-lifetime 2h0m0s: want 1m0s to 1h0m0s"},
		{[]string{"serve", "--settings-session-lifetime", "1m"}, "publisher: serve: --settings-session-lifetime 1m0s: want 5m0s to 24h0m0s"},
		{[]string{"serve", "--admin-public-url", "admin.example.com"}, `publisher: serve: --admin-public-url "admin.example.com": want the absolute http or https base URL`},
		{[]string{"verify", "--max-differences", "0"}, "publisher: verify: --max-differences 0: want a positive number\n"},
		{[]string{"verify", "--progress", "loud"}, `publisher: verify: --progress "loud": want auto, bar, plain or none`},
		{[]string{"rebuild", "--workers", "-1"}, "publisher: rebuild: --workers and --cache: want 0 or more"},
		{[]string{"rebuild", "--switch-timeout", "0s"}, "publisher: rebuild: --handover-timeout 1m0s, --switch-timeout 0s: want positive durations"},
	} {
		code, stdout, stderr := runCLI(t, nil, c.args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "usage: ") > 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant 2 and a stderr starting %q, with one usage at most", c.args, code, stdout, stderr, c.want)
		}
	}
}

// version and --version print the build information: the module version, and the Go version
// this binary was built with.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runCLI(t, nil, args...)
		if code != exitOK || !strings.HasPrefix(stdout, "publisher ") || !strings.Contains(stdout, "\ngo: "+runtime.Version()) || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and the version", args, code, stdout, stderr)
		}
	}
}

func TestVersionText(t *testing.T) {
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}, {Key: "vcs.revision", Value: "3f2c1d0"},
			{Key: "vcs.time", Value: "2026-11-20T09:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "publisher v1.4.0\nrevision: 3f2c1d0\ncommit time: 2026-11-20T09:00:00Z\ngo: go1.26.8 linux/arm64\n"},
		{"a modified tree", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261120090000-3f2c1d0+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3f2c1d0"}, {Key: "vcs.modified", Value: "true"},
		}}, "publisher v0.0.0-20261120090000-3f2c1d0+dirty\nrevision: 3f2c1d0 (modified: built with uncommitted changes)\ngo: go1.26.8\n"},
		{"no version control", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"publisher (devel)\nrevision: unknown (built outside a version-controlled tree, or with -buildvcs=false)\ngo: go1.26.8\n"},
		{"no module version", debug.BuildInfo{GoVersion: "go1.26.8"},
			"publisher (unknown version)\nrevision: unknown (built outside a version-controlled tree, or with -buildvcs=false)\ngo: go1.26.8\n"},
	} {
		if got := versionText(&c.info); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// admin ping exits 1 when a real receiver refuses the test delivery, and 0 when it accepts it;
// flags may follow the arguments.
func TestPingExitStatus(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "not today", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.WebhookAllowPrivate, c.WebhookRootCAs = true, roots })
	demo, _ := os.ReadFile("demo.json")
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	reg := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "`+receiver.URL+`/hook"}`))
	if reg.status != 201 {
		t.Fatalf("register: got %d %s", reg.status, reg.body)
	}
	id := reg.json(t)["endpoint"].(map[string]any)["id"].(string)

	ping := []string{"admin", "ping", "chez-marcel", id, "--admin-url", m.AdminURL, "--admin-token", testAdminToken}
	code, stdout, stderr := runCLI(t, nil, ping...)
	if code != exitFailed || !strings.Contains(stdout, `"status_code":500`) ||
		stderr != "publisher: admin ping: the receiver did not accept the test delivery: http status 500\n" {
		t.Errorf("ping of a refusing receiver: exit %d, stdout %s, stderr %q; want 1, the attempt, and the failure", code, stdout, stderr)
	}
	refuse.Store(false)
	if code, stdout, stderr := runCLI(t, nil, ping...); code != exitOK || !strings.Contains(stdout, `"status_code":204`) || stderr != "" {
		t.Errorf("ping of an accepting receiver: exit %d, stdout %s, stderr %q; want 0 and the attempt", code, stdout, stderr)
	}
}

// The exit status says whether the operation succeeded: a request the admin API refuses and an
// import with a refused document exit 1, a success 0; flags may follow the arguments.
func TestExitStatusOfOperations(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	env := map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"slug": "bad-one", "name": "", "business_type": "nightclub"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	token := []string{"--admin-token", testAdminToken}
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout
	}{
		{append([]string{"import", "demo.json", bad, "--progress", "none"}, token...), exitFailed, `"slug":"chez-marcel"`},
		{append([]string{"import", "demo.json"}, token...), exitOK, `"status":"unchanged"`},
		{append([]string{"admin", "get", "chez-marcel"}, token...), exitOK, `"chez-marcel"`},
		{append([]string{"admin", "get", "nowhere"}, token...), exitFailed, ""},
		{append([]string{"admin", "set-redirect", "chez-marcel", "on"}, token...), exitOK, ""},
		{append([]string{"admin", "withdraw-version", "chez-marcel", "la-carte", "nope"}, token...), exitFailed, ""},
	} {
		code, stdout, stderr := runCLI(t, env, c.args...)
		if code != c.code || !strings.Contains(stdout, c.out) {
			t.Errorf("%q: exit %d, stdout %s, stderr %s; want %d", c.args, code, stdout, stderr, c.code)
		}
	}
}

// admin and import given only the data directory of a running serve reach its admin API, on
// whatever port it took, at the address it records there; once it stopped, the record is gone
// and they try the default address.
func TestAdminFindsServeInTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	recorded, err := addrfile.Read(dir, addrfile.Admin)
	if err != nil || recorded != m.AdminURL || !strings.HasPrefix(recorded, "http://127.0.0.1:") {
		t.Fatalf("recorded %q, %v; want the admin API's %s", recorded, err, m.AdminURL)
	}
	demo := filepath.Join(t.TempDir(), "demo.json")
	raw, _ := os.ReadFile("demo.json")
	if err := os.WriteFile(demo, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", demo, "--data-dir", dir, "--admin-token", testAdminToken, "--progress", "none"},
		{"admin", "list", "--data-dir", dir, "--admin-token", testAdminToken},
	} {
		if code, stdout, stderr := runCLI(t, nil, args...); code != exitOK || !strings.Contains(stdout, "chez-marcel") {
			t.Errorf("%q: exit %d, stdout %s, stderr %s; want 0 and the establishment", args, code, stdout, stderr)
		}
	}
	m.Close()
	if recorded, err := addrfile.Read(dir, addrfile.Admin); recorded != "" || err != nil {
		t.Errorf("after the admin API closed: recorded %q, %v; want no record", recorded, err)
	}
}
