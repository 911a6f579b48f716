package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// seen is the last request an admin API stand-in was sent.
type seen struct {
	mu                                sync.Mutex
	requests                          int
	method, target, contentType, auth string
	body                              []byte
}

// adminStandIn is an admin API answering {"ok":true}, but 404 under .../missing, a test delivery
// the receiver accepted on a ping of endpoint w1 and one it refused of any other, and a late
// collection when the request says so; env points the commands at it with a token.
func adminStandIn(t *testing.T) (*seen, func(string) string) {
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests++
		s.method, s.target, s.contentType, s.auth, s.body = r.Method, r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body
		s.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/missing"):
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"Not found"}`)
		case strings.HasSuffix(r.URL.Path, "/w1/ping"):
			io.WriteString(w, `{"attempt":{"number":1,"time":"2026-11-22T10:00:00Z","status_code":204,"latency_ms":3}}`)
		case strings.HasSuffix(r.URL.Path, "/ping"):
			io.WriteString(w, `{"attempt":{"number":1,"time":"2026-11-22T10:00:00Z","status_code":500,"latency_ms":3,"error":"http status 500"}}`)
		case r.URL.Path == "/admin/v1/files/collect" && r.Header.Get("Authorization") == "Bearer late":
			io.WriteString(w, `{"stored":3,"referenced":1,"young":2,"removed":[],"orphans":0,"late":true}`)
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"PUBLISHER_ADMIN_URL": srv.URL + "/", "PUBLISHER_ADMIN_TOKEN": "secret"}
	return s, func(k string) string { return env[k] }
}

// Each subcommand makes its request, its arguments escaped into the path, and prints the answer.
func TestAdminSubcommands(t *testing.T) {
	s, env := adminStandIn(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	version, menu := file("v1.json", `{"id":"v 1","items":[]}`), file("card.pdf", "%PDF-1.7")
	page1, page2 := file("p1.png", "one"), file("p2.png", "two")
	const est = "/admin/v1/establishments/"
	for _, c := range []struct {
		args                 []string
		method, target, body string
		contentType          string // "" for none
	}{
		{[]string{"list"}, "GET", "/admin/v1/establishments", "", ""},
		{[]string{"status"}, "GET", "/admin/v1/status", "", ""},
		{[]string{"collect-files"}, "POST", "/admin/v1/files/collect", "", ""},
		{[]string{"get", "a/b"}, "GET", est + "a%2Fb", "", ""},
		{[]string{"activate", "s"}, "POST", est + "s/activate", "", ""},
		{[]string{"enable-api", "s"}, "POST", est + "s/api/enable", "", ""},
		{[]string{"disable-api", "s"}, "POST", est + "s/api/disable", "", ""},
		{[]string{"regenerate-key", "s"}, "POST", est + "s/api/regenerate-key", "", ""},
		{[]string{"set-redirect", "s", "on"}, "PUT", est + "s/menu-redirect", `{"enabled":true}`, "application/json"},
		{[]string{"set-redirect", "s", "off"}, "PUT", est + "s/menu-redirect", `{"enabled":false}`, "application/json"},
		{[]string{"publish-version", "s", "la carte", version}, "PUT", est + "s/menu-types/la%20carte/versions/v%201", `{"id":"v 1","items":[]}`, "application/json"},
		{[]string{"withdraw-version", "s", "carte", "v1"}, "DELETE", est + "s/menu-types/carte/versions/v1", "", ""},
		{[]string{"add-webhook", "s", "https://example.com/h"}, "POST", est + "s/webhooks", `{"url":"https://example.com/h"}`, "application/json"},
		{[]string{"remove-webhook", "s", "w1"}, "DELETE", est + "s/webhooks/w1", "", ""},
		{[]string{"webhooks", "s"}, "GET", est + "s/webhooks", "", ""},
		{[]string{"deliveries", "s", "w1"}, "GET", est + "s/webhooks/w1/deliveries", "", ""},
		{[]string{"ping", "s", "w1"}, "POST", est + "s/webhooks/w1/ping", "", ""},
		{[]string{"enable-webhook", "s", "w1"}, "POST", est + "s/webhooks/w1/enable", "", ""},
		{[]string{"redeliver", "d1"}, "POST", "/admin/v1/deliveries/d1/redeliver", "", ""},
		{[]string{"rotate-secret", "s", "w1"}, "POST", est + "s/webhooks/w1/rotate-secret", "", ""},
		{[]string{"rotate-secret", "s", "w1", "48h"}, "POST", est + "s/webhooks/w1/rotate-secret", `{"grace":"48h"}`, "application/json"},
		{[]string{"upload", menu}, "POST", "/admin/v1/files", "%PDF-1.7", "application/octet-stream"},
		{[]string{"set-master-menu", "s", "none"}, "DELETE", est + "s/master-menu", "", ""},
		{[]string{"set-master-menu", "s", "sha256:abc"}, "PUT", est + "s/master-menu", `{"url":"sha256:abc"}`, "application/json"},
		{[]string{"set-master-menu", "s", menu}, "PUT", est + "s/master-menu", "%PDF-1.7", "application/octet-stream"},
	} {
		var out bytes.Buffer
		if err := Admin(context.Background(), c.args, &out, io.Discard, env); err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if s.method != c.method || s.target != c.target || string(s.body) != c.body || s.contentType != c.contentType || s.auth != "Bearer secret" {
			t.Errorf("%q: sent %s %s %q (%q, %q), want %s %s %q (%q)", c.args, s.method, s.target, s.body, s.contentType, s.auth, c.method, c.target, c.body, c.contentType)
		}
		if c.args[0] != "ping" && out.String() != `{"ok":true}` {
			t.Errorf("%q: printed %q, want the answer", c.args, out.String())
		}
	}

	if err := Admin(context.Background(), []string{"add-asset", "s", "carte", "v1", "fr_en", page1, page2}, io.Discard, io.Discard, env); err != nil {
		t.Fatal(err)
	}
	if s.method != "POST" || s.target != est+"s/menu-types/carte/versions/v1/assets?language_scope=fr_en" ||
		!strings.HasPrefix(s.contentType, "multipart/form-data; boundary=") || !bytes.Contains(s.body, []byte(`filename="p1.png"`)) ||
		bytes.Index(s.body, []byte("one")) > bytes.Index(s.body, []byte("two")) {
		t.Errorf("add-asset: sent %s %s (%s) %q, want both pages in order", s.method, s.target, s.contentType, s.body)
	}
}

// A wrong command, flag or count of arguments is a usage error naming what is wanted; a wrong
// value or answer is the operation's failure.
func TestAdminRefusals(t *testing.T) {
	_, env := adminStandIn(t)
	noID := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(noID, []byte(`{"items":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		err   string
		usage bool
	}{
		{nil, "admin: no command given", true},
		{[]string{"nope"}, `admin: unknown command "nope"; 'publisher admin --help' lists them`, true},
		{[]string{"regenerate-keys", "s"}, `admin: unknown command "regenerate-keys" (did you mean "regenerate-key"?)`, true},
		{[]string{"get"}, "admin get: want 1 argument (SLUG), got 0", true},
		{[]string{"get", "a", "b"}, "admin get: want 1 argument (SLUG), got 2", true},
		{[]string{"list", "x"}, `admin list: takes no arguments, got ["x"]`, true},
		{[]string{"set-redirect", "s"}, "admin set-redirect: want 2 arguments (SLUG on|off), got 1", true},
		{[]string{"rotate-secret", "s"}, "admin rotate-secret: want 2 or 3 arguments (SLUG ID [GRACE]), got 1", true},
		{[]string{"rotate-secret", "s", "w", "1h", "x"}, "admin rotate-secret: want 2 or 3 arguments (SLUG ID [GRACE]), got 4", true},
		{[]string{"add-asset", "s", "carte", "v1", "fr"}, "admin add-asset: want at least 5 arguments (SLUG TYPE VERSION SCOPE FILE...), got 4", true},
		{[]string{"set-redirect", "s", "maybe"}, `admin set-redirect: want on or off, got "maybe"`, true},
		{[]string{"get", "s", "--admin-tokn", "x"}, "admin: unknown flag --admin-tokn (did you mean --admin-token?)", true},
		{[]string{"publish-version", "s", "carte", noID}, "admin publish-version: " + noID + ": want a JSON menu version with an id", false},
		{[]string{"get", "missing"}, `admin get: GET /admin/v1/establishments/missing: 404 Not Found`, false},
		{[]string{"ping", "s", "w2"}, `admin ping: the receiver did not accept the test delivery: http status 500`, false},
	} {
		err := Admin(context.Background(), c.args, io.Discard, io.Discard, env)
		var u *envflag.UsageError
		if err == nil || err.Error() != c.err {
			t.Errorf("%q: got %v, want %s", c.args, err, c.err)
		}
		if errors.As(err, &u) != c.usage {
			t.Errorf("%q: usage error %t, want %t", c.args, errors.As(err, &u), c.usage)
		}
	}
}

// The usage of admin is in the error of a line without a command, once; other usage errors point
// to --help.
func TestAdminUsageOnce(t *testing.T) {
	err := Admin(context.Background(), nil, io.Discard, io.Discard, func(string) string { return "" })
	var u *envflag.UsageError
	if !errors.As(err, &u) || strings.Count(u.Usage, "usage: publisher admin <command> [args] [flags]") != 1 ||
		!strings.Contains(u.Usage, "\n  ping SLUG ID") || !strings.Contains(u.Usage, "--admin-token") {
		t.Errorf("got %v with usage\n%s\nwant the usage of admin once, its commands and flags", err, u.Usage)
	}
}

// --help of admin and of each of its commands is its usage, wherever it is on the line, and never
// needs a token nor makes a request.
func TestAdminHelp(t *testing.T) {
	s, _ := adminStandIn(t)
	noToken := func(k string) string {
		return map[string]string{"PUBLISHER_DATA_DIR": t.TempDir()}[k]
	}
	check := func(args []string, want ...string) {
		t.Helper()
		var out bytes.Buffer
		err := Admin(context.Background(), args, &out, io.Discard, noToken)
		var h *envflag.Help
		if !errors.As(err, &h) {
			t.Errorf("%q: got %v, want help", args, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(h.Usage, w) {
				t.Errorf("%q: usage\n%s\nwant %q in it", args, h.Usage, w)
			}
		}
		if out.Len() > 0 {
			t.Errorf("%q: printed %q, want nothing but the help", args, out.String())
		}
	}
	check([]string{"--help"}, "usage: publisher admin <command> [args] [flags]", "  collect-files", "--admin-url")
	check([]string{"-h", "get"}, "usage: publisher admin get SLUG [flags]", "current content")
	for _, c := range adminCommands() {
		synopsis := strings.TrimSpace("usage: publisher admin " + c.name + " " + c.args)
		check([]string{c.name, "--help"}, synopsis+" [flags]\n", "--admin-token", "exit status is 1")
		check([]string{c.name, "x", "-h", "y"}, synopsis)
	}
	if s.requests != 0 {
		t.Errorf("%d requests made, want none", s.requests)
	}
}

// Flags come anywhere on the line: after the arguments, and between them.
func TestAdminFlagsAfterArguments(t *testing.T) {
	s, env := adminStandIn(t)
	url := env("PUBLISHER_ADMIN_URL")
	for _, args := range [][]string{
		{"get", "chez-marcel", "--admin-token", "x", "--admin-url", url},
		{"get", "--admin-url=" + url, "chez-marcel", "-admin-token", "x"},
		{"--admin-token", "x", "get", "chez-marcel", "--admin-url", url},
	} {
		if err := Admin(context.Background(), args, io.Discard, io.Discard, func(string) string { return "" }); err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if s.auth != "Bearer x" || s.target != "/admin/v1/establishments/chez-marcel" {
			t.Errorf("%q: sent %s with %q, want the slug's path with the token x", args, s.target, s.auth)
		}
	}
	// -- ends the flags: a slug may start with a hyphen (the API refuses it, but it is sent).
	if err := Admin(context.Background(), []string{"get", "--", "-x"}, io.Discard, io.Discard, env); err != nil || s.target != "/admin/v1/establishments/-x" {
		t.Errorf("get -- -x: got %v, sent %s", err, s.target)
	}
}

// Without a token given or found, the command says how to give one, as a usage error.
func TestAdminWithoutToken(t *testing.T) {
	dir := t.TempDir()
	err := Admin(context.Background(), []string{"list", "--data-dir", dir}, io.Discard, io.Discard, func(string) string { return "" })
	var u *envflag.UsageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "admin list: no admin token: give --admin-token (or PUBLISHER_ADMIN_TOKEN), or the --data-dir of a local serve") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "admin-token")) {
		t.Errorf("got %v, want a usage error naming the flag, its variable and the file looked for", err)
	}
}

// An answer of success that reports a failure is the command's failure: a test delivery the
// receiver refused, a collection that stopped before the end. The answer is printed all the same.
func TestAdminOperationFailures(t *testing.T) {
	_, env := adminStandIn(t)
	var out bytes.Buffer
	if err := Admin(context.Background(), []string{"ping", "s", "w1"}, &out, io.Discard, env); err != nil || !strings.Contains(out.String(), `"status_code":204`) {
		t.Errorf("ping accepted: got %v, printed %s", err, out.String())
	}
	out.Reset()
	err := Admin(context.Background(), []string{"ping", "s", "w2"}, &out, io.Discard, env)
	if err == nil || !strings.Contains(out.String(), `"status_code":500`) {
		t.Errorf("ping refused: got %v, printed %s; want an error and the attempt printed", err, out.String())
	}
	if err := Admin(context.Background(), []string{"collect-files"}, io.Discard, io.Discard, env); err != nil {
		t.Errorf("collect-files: %v", err)
	}
	err = Admin(context.Background(), []string{"collect-files", "--admin-token", "late"}, io.Discard, io.Discard, env)
	if err == nil || !strings.Contains(err.Error(), "admin collect-files: the collection stopped before the end") {
		t.Errorf("late collection: got %v, want an error saying it stopped", err)
	}
}

// A refused connection says where the admin API was looked for.
func TestAdminUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := Admin(context.Background(), []string{"list", "--admin-url", url, "--admin-token", "x"}, io.Discard, io.Discard, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "admin list: no admin API at "+url+" (is serve running? --admin-url says where it is)") {
		t.Errorf("got %v, want the URL named", err)
	}
}

// TestArity reads the counts of arguments of each form of synopsis.
func TestArity(t *testing.T) {
	for _, tc := range []struct {
		synopsis    string
		least, most int
	}{
		{"", 0, 0},
		{"SLUG", 1, 1},
		{"SLUG [BEFORE]", 1, 2},
		{"FILE...", 1, -1},
		{"URL [SLUG...]", 1, -1},
		{"NAME SCOPE EXPIRES_IN [SLUG...]", 3, -1},
		{"SLUG TYPE VERSION SCOPE FILE...", 5, -1},
	} {
		if least, most := arity(tc.synopsis); least != tc.least || most != tc.most {
			t.Errorf("arity(%q) = %d, %d, want %d, %d", tc.synopsis, least, most, tc.least, tc.most)
		}
	}
}
