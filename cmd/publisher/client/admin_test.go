package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// seen is the last request an admin API stand-in was sent.
type seen struct {
	mu                                sync.Mutex
	method, target, contentType, auth string
	body                              []byte
}

func adminStandIn(t *testing.T) (*seen, func(string) string) {
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.method, s.target, s.contentType, s.auth, s.body = r.Method, r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"Not found"}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
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
		if out.String() != `{"ok":true}` {
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

// A wrong command or count of arguments prints the usage; a wrong value or answer does not.
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
		{[]string{"nope"}, `admin: unknown command "nope"`, true},
		{[]string{"get"}, "admin get: want 1 arguments, got 0", true},
		{[]string{"list", "x"}, "admin list: want 0 arguments, got 1", true},
		{[]string{"rotate-secret", "s"}, "admin rotate-secret: want 2 arguments, got 1", true},
		{[]string{"rotate-secret", "s", "w", "1h", "x"}, "admin rotate-secret: want 2 arguments, got 4", true},
		{[]string{"add-asset", "s", "carte", "v1", "fr"}, "admin add-asset: want SLUG TYPE VERSION SCOPE and at least one file", true},
		{[]string{"set-redirect", "s", "maybe"}, `admin set-redirect: want on or off, got "maybe"`, false},
		{[]string{"publish-version", "s", "carte", noID}, noID + ": want a JSON menu version with an id", false},
		{[]string{"get", "missing"}, `GET /admin/v1/establishments/missing: 404 Not Found: {"error":"Not found"}`, false},
	} {
		var stderr bytes.Buffer
		err := Admin(context.Background(), c.args, io.Discard, &stderr, env)
		if err == nil || err.Error() != c.err {
			t.Errorf("%q: got %v, want %s", c.args, err, c.err)
		}
		if usage := strings.Contains(stderr.String(), "usage: publisher admin [flags] <command> [args]\n\n  list"); usage != c.usage {
			t.Errorf("%q: usage printed %t, want %t:\n%s", c.args, usage, c.usage, stderr.String())
		}
	}
}
