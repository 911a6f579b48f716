package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newToken creates a scoped token with the admin token and returns its id and secret.
func (m *Main) newToken(tb testing.TB, body string) (id, secret string) {
	tb.Helper()
	r := m.admin(tb, http.MethodPost, "/admin/v1/tokens", []byte(body))
	if r.status != http.StatusCreated {
		tb.Fatalf("create token %s: %d %s", body, r.status, r.body)
	}
	v := r.json(tb)
	return v["id"].(string), v["token"].(string)
}

// as sends a request to the admin API under token.
func (m *Main) as(tb testing.TB, token, method, path string, body []byte) reply {
	tb.Helper()
	return do(tb, method, m.AdminURL+path, body, "Authorization", "Bearer "+token, "Content-Type", "application/json")
}

// TestScopedTokens drives the admin API with a token of each scope: an establishment token reads
// and sets its own establishment's API settings, and meets every other establishment, and every
// route, as the admin token meets an establishment that does not exist; it cannot import content
// or create tokens; a read token reads and cannot write; revoked and expired tokens are 401; the
// audit names the token of each command.
func TestScopedTokens(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixNano())
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
		c.WebhookAllowPrivate = true
	})
	importDemoAs(t, m, "chez-marcel", "le-zinc")
	ownID, own := m.newToken(t, `{"name": "owner of chez-marcel", "scope": "establishment", "establishments": ["chez-marcel"], "expires_in": "720h"}`)
	_, reader := m.newToken(t, `{"name": "cache", "scope": "read"}`)
	_, backOffice := m.newToken(t, `{"name": "back office", "scope": "platform", "expires_in": "1h"}`)
	const est, other = "/admin/v1/establishments/chez-marcel", "/admin/v1/establishments/le-zinc"
	expect := func(r reply, status int, what string) reply {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: got %d %s, want %d", what, r.status, r.body, status)
		}
		return r
	}

	// Its own establishment: reads and API settings.
	expect(m.as(t, own, http.MethodGet, est, nil), 200, "read its establishment")
	expect(m.as(t, own, http.MethodPost, est+"/api/regenerate-key", nil), 200, "regenerate its key")
	expect(m.as(t, own, http.MethodPut, est+"/menu-redirect", []byte(`{"enabled": false}`)), 200, "its menu redirect")
	expect(m.as(t, own, http.MethodGet, est+"/webhooks", nil), 200, "its webhooks")
	expect(m.as(t, own, http.MethodGet, est+"/audit", nil), 200, "its audit")
	// Its own establishment's content, and everything platform-wide: 403.
	demo := m.admin(t, http.MethodGet, est, nil)
	doc, _ := json.Marshal(demo.json(t)["establishment"])
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, est}, {http.MethodPost, est + "/activate"}, {http.MethodDelete, est + "/master-menu"},
		{http.MethodPost, "/admin/v1/tokens"}, {http.MethodGet, "/admin/v1/tokens"}, {http.MethodGet, "/admin/v1/establishments"},
		{http.MethodGet, "/admin/v1/changes"}, {http.MethodGet, "/admin/v1/status"}, {http.MethodPost, "/admin/v1/import"},
	} {
		expect(m.as(t, own, c.method, c.path, doc), 403, "establishment token: "+c.method+" "+c.path)
	}
	// Another establishment: exactly what an unknown one is.
	for _, c := range []struct{ method, suffix string }{
		{http.MethodGet, ""}, {http.MethodPut, ""}, {http.MethodGet, "/audit"}, {http.MethodPost, "/api/enable"},
		{http.MethodGet, "/webhooks"}, {http.MethodPost, "/webhooks"}, {http.MethodPut, "/menu-redirect"},
	} {
		got := m.as(t, own, c.method, other+c.suffix, doc)
		unknown := m.as(t, own, c.method, "/admin/v1/establishments/nowhere"+c.suffix, doc)
		expect(got, 404, "another establishment: "+c.method+" "+c.suffix)
		if strings.ReplaceAll(string(got.body), "le-zinc", "nowhere") != string(unknown.body) {
			t.Errorf("%s %s: another establishment answers %s, an unknown one %s", c.method, c.suffix, got.body, unknown.body)
		}
	}

	// A read token reads everything and writes nothing.
	expect(m.as(t, reader, http.MethodGet, other, nil), 200, "read token: read")
	expect(m.as(t, reader, http.MethodGet, "/admin/v1/changes?limit=1", nil), 200, "read token: changes")
	expect(m.as(t, reader, http.MethodGet, other+"/audit", nil), 200, "read token: audit")
	expect(m.as(t, reader, http.MethodPost, other+"/api/regenerate-key", nil), 403, "read token: regenerate")
	expect(m.as(t, reader, http.MethodPut, other, doc), 403, "read token: import")
	expect(m.as(t, reader, http.MethodPost, "/admin/v1/tokens", []byte(`{"name": "x", "scope": "platform"}`)), 403, "read token: create a token")

	// A platform token does everything but make tokens, which could outlive it.
	expect(m.as(t, backOffice, http.MethodGet, other, nil), 200, "platform token: read")
	expect(m.as(t, backOffice, http.MethodPost, "/admin/v1/tokens", []byte(`{"name": "x", "scope": "platform"}`)), 403, "platform token: create a token")
	expect(m.as(t, backOffice, http.MethodGet, "/admin/v1/tokens", nil), 403, "platform token: list tokens")
	// Through its own establishment, another's webhook endpoint is an unknown one.
	hook := expect(m.admin(t, http.MethodPost, other+"/webhooks", []byte(`{"url": "https://127.0.0.1:9/zinc"}`)), 201, "another's endpoint").json(t)
	hookID := hook["endpoint"].(map[string]any)["id"].(string)
	for _, suffix := range []string{"/enable", "/ping", "/rotate-secret"} {
		got := m.as(t, own, http.MethodPost, est+"/webhooks/"+hookID+suffix, nil)
		unknown := m.as(t, own, http.MethodPost, est+"/webhooks/wh_00000000000000000000000000000000"+suffix, nil)
		expect(got, 404, "another's endpoint through its own establishment: "+suffix)
		if strings.ReplaceAll(string(got.body), hookID, "wh_00000000000000000000000000000000") != string(unknown.body) {
			t.Errorf("%s: another's endpoint answers %s, an unknown one %s", suffix, got.body, unknown.body)
		}
	}

	// The audit names the token of each command, newest first.
	var audit struct {
		Entries []struct {
			Credential struct{ ID, Name string }
			Action     string
			Detail     string
		}
	}
	if err := json.Unmarshal(expect(m.admin(t, http.MethodGet, est+"/audit", nil), 200, "audit").body, &audit); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range audit.Entries {
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Credential.ID, e.Credential.Name, e.Action, e.Detail))
	}
	want := []string{
		ownID + " owner of chez-marcel menu_redirect.changed off",
		ownID + " owner of chez-marcel api_key.regenerated ",
		"admin admin token establishment.imported ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit:\n%q\nwant\n%q", got, want)
	}

	// Expired, then revoked: 401.
	now.Add(int64(721 * time.Hour))
	expect(m.as(t, own, http.MethodGet, est, nil), 401, "an expired token")
	now.Add(-int64(2 * time.Hour))
	expect(m.as(t, own, http.MethodGet, est, nil), 200, "a token not yet expired")
	expect(m.admin(t, http.MethodDelete, "/admin/v1/tokens/"+ownID, nil), 204, "revoke")
	expect(m.as(t, own, http.MethodGet, est, nil), 401, "a revoked token")
	expect(m.admin(t, http.MethodGet, "/admin/v1/tokens/"+ownID, nil), 404, "a revoked token's record")
}

// TestTokenCommands creates a scoped token with the command line, uses it from the command line,
// reads the audit and revokes the token.
func TestTokenCommands(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	importDemoAs(t, m, "chez-marcel", "le-zinc")
	ctx := t.Context()
	var out bytes.Buffer
	if err := run(ctx, []string{"admin", "create-token", "owner", "establishment", "24h", "chez-marcel"}, &out, io.Discard, adminEnv(m)); err != nil {
		t.Fatal(err)
	}
	var made struct{ ID, Token string }
	if err := json.Unmarshal(out.Bytes(), &made); err != nil || made.Token == "" {
		t.Fatalf("create-token printed %q: %v", out.String(), err)
	}
	owner := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL, "PUBLISHER_ADMIN_TOKEN": made.Token}[k]
	}
	if err := run(ctx, []string{"admin", "disable-api", "chez-marcel"}, io.Discard, io.Discard, owner); err != nil {
		t.Fatalf("disable-api with the establishment's token: %v", err)
	}
	if err := run(ctx, []string{"admin", "disable-api", "le-zinc"}, io.Discard, io.Discard, owner); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("disable-api of another establishment: %v, want a 404", err)
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "audit", "chez-marcel"}, &out, io.Discard, owner); err != nil || !strings.Contains(out.String(), `"id":"`+made.ID+`","name":"owner"},"action":"public_api.disabled"`) {
		t.Fatalf("audit: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "tokens"}, &out, io.Discard, adminEnv(m)); err != nil || !strings.Contains(out.String(), made.ID) || strings.Contains(out.String(), made.Token) {
		t.Fatalf("tokens: %v %q", err, out.String())
	}
	if err := run(ctx, []string{"admin", "revoke-token", made.ID}, io.Discard, io.Discard, adminEnv(m)); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"admin", "get", "chez-marcel"}, io.Discard, io.Discard, owner); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a revoked token: %v, want a 401", err)
	}
}
