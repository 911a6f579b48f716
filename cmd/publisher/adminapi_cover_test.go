package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
)

// TestAdminAnswersAreChecked drives every operation of the admin API's description, and some
// refusals, through one process: each answer is checked against the description by the checker
// every end-to-end test has, and every described operation must have been checked.
func TestAdminAnswersAreChecked(t *testing.T) {
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := testMain(t.TempDir(), "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})
	checker := checkAdmin(t, m)
	startMain(t, m)

	const est = "/admin/v1/establishments/chez-marcel"
	token := []string{"Authorization", "Bearer " + testAdminToken}
	expect := func(r reply, status int, what string) reply {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: got %d %s, want %d", what, r.status, r.body, status)
		}
		return r
	}
	for _, path := range []string{"/admin/openapi.json", "/admin/openapi.yaml", "/admin/import.schema.json"} {
		expect(do(t, http.MethodGet, m.AdminURL+path, nil), 200, path)
	}
	importDemo(t, m)
	expect(m.admin(t, http.MethodGet, "/admin/v1/status", nil), 200, "status")
	expect(m.admin(t, http.MethodGet, "/admin/v1/establishments", nil), 200, "list")
	expect(m.admin(t, http.MethodGet, est, nil), 200, "get")
	expect(m.admin(t, http.MethodPost, est+"/activate", nil), 200, "activate")
	expect(m.admin(t, http.MethodPost, est+"/api/disable", nil), 200, "disable")
	expect(m.admin(t, http.MethodPost, est+"/api/enable", nil), 200, "enable")
	expect(m.admin(t, http.MethodPost, est+"/api/enable", nil), 409, "enable again")
	expect(m.admin(t, http.MethodPost, est+"/api/regenerate-key", nil), 200, "regenerate")
	expect(m.admin(t, http.MethodPut, est+"/menu-redirect", []byte(`{"enabled": false}`)), 200, "menu redirect")
	expect(m.admin(t, http.MethodPut, est+"/master-menu", []byte(`{"url": "https://cdn.example.fr/carte.pdf"}`)), 200, "master menu by url")
	expect(m.admin(t, http.MethodDelete, est+"/master-menu", nil), 200, "no master menu")
	jpeg := testJPEG(t)
	expect(m.upload(t, http.MethodPost, "/admin/v1/files", "image/jpeg", jpeg), 201, "upload")
	expect(m.upload(t, http.MethodPut, est+"/master-menu", "image/jpeg", jpeg), 200, "master menu upload")
	version := est + "/menu-types/la-carte/versions/hiver-2026"
	expect(m.admin(t, http.MethodPut, version, []byte(`{"assets": [], "sections": []}`)), 200, "publish")
	expect(m.upload(t, http.MethodPost, version+"/assets?language_scope=fr", "image/jpeg", jpeg), 200, "asset")
	expect(m.admin(t, http.MethodDelete, version, nil), 200, "withdraw")
	expect(m.admin(t, http.MethodPost, "/admin/v1/files/collect", nil), 200, "collect")
	batch := `{"slug": "le-zinc", "name": "Le Zinc"}` + "\n" + `{"slug": "Bad", "name": "Bad"}` + "\n"
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/import", []byte(batch), append(token, "Content-Type", "application/x-ndjson")...), 200, "batch")

	reg := expect(m.admin(t, http.MethodPost, est+"/webhooks", []byte(`{"url": "`+receiver.URL+`/hook"}`)), 201, "register")
	id := reg.json(t)["endpoint"].(map[string]any)["id"].(string)
	hook := est + "/webhooks/" + id
	expect(m.admin(t, http.MethodGet, est+"/webhooks", nil), 200, "endpoints")
	expect(m.admin(t, http.MethodPost, hook+"/rotate-secret", []byte(`{"grace": "1h"}`)), 200, "rotate")
	expect(m.admin(t, http.MethodPost, hook+"/enable", nil), 200, "enable endpoint")
	expect(m.admin(t, http.MethodPost, hook+"/ping", nil), 200, "ping")
	expect(m.admin(t, http.MethodPut, version, []byte(`{"sections": []}`)), 200, "a change to deliver")
	var delivery string
	eventually(t, "a delivery done", func() bool {
		var log struct {
			Deliveries []struct{ ID, Status string }
		}
		r := expect(m.admin(t, http.MethodGet, hook+"/deliveries?limit=10", nil), 200, "deliveries")
		if err := json.Unmarshal(r.body, &log); err != nil {
			t.Fatal(err)
		}
		for _, d := range log.Deliveries {
			if d.Status == "delivered" && strings.HasPrefix(d.ID, "msg_") {
				delivery = d.ID
			}
		}
		return delivery != ""
	})
	expect(m.admin(t, http.MethodPost, "/admin/v1/deliveries/"+delivery+"/redeliver", nil), 202, "redeliver")
	expect(m.admin(t, http.MethodDelete, hook, nil), 200, "remove endpoint")

	platform := expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/webhooks", []byte(`{"url": "`+receiver.URL+`/all"}`), append(token, "Content-Type", "application/json")...), 201, "register platform")
	pid := platform.json(t)["endpoint"].(map[string]any)["id"].(string)
	phook := "/admin/v1/webhooks/" + pid
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/webhooks", nil, token...), 200, "platform endpoints")
	expect(do(t, http.MethodGet, m.AdminURL+phook, nil, token...), 200, "platform endpoint")
	expect(do(t, http.MethodPost, m.AdminURL+phook+"/rotate-secret", nil, token...), 200, "rotate platform")
	expect(do(t, http.MethodPost, m.AdminURL+phook+"/enable", nil, token...), 200, "enable platform")
	expect(do(t, http.MethodPost, m.AdminURL+phook+"/ping", nil, token...), 200, "ping platform")
	expect(do(t, http.MethodGet, m.AdminURL+phook+"/deliveries", nil, token...), 200, "platform deliveries")
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/webhooks", []byte(`{"url": "http://x.example", "establishments": ["Bad"]}`), append(token, "Content-Type", "application/json")...), 422, "bad platform endpoint")
	expect(do(t, http.MethodDelete, m.AdminURL+phook, nil, token...), 200, "remove platform")
	expect(do(t, http.MethodGet, m.AdminURL+phook, nil, token...), 404, "removed platform")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/debug/pprof/heap?debug=1", nil, token...), 200, "profile")
	feed := expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/changes?limit=1", nil, token...), 200, "changes")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/changes?wait=1ms&after="+feed.json(t)["next"].(string), nil, token...), 200, "more changes")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/changes?after=c2", nil, token...), 400, "a bad cursor")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/changes?after="+events.Cursor{Signal: 1 << 40}.String(), nil, token...), 410, "a cursor gone")
	asJSON := append(token, "Content-Type", "application/json")
	dst := expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/destinations", []byte(`{"type": "kafka", "brokers": ["127.0.0.1:1"], "topic": "menus"}`), asJSON...), 201, "destination")
	one := "/admin/v1/destinations/" + dst.json(t)["id"].(string)
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/destinations", []byte(`{"type": "kafka", "topic": "menus"}`), asJSON...), 422, "a destination without brokers")
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/destinations", []byte(`{"type": `), asJSON...), 400, "a malformed destination")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/destinations", nil, token...), 200, "destinations")
	expect(do(t, http.MethodGet, m.AdminURL+one, nil, token...), 200, "one destination")
	expect(do(t, http.MethodPost, m.AdminURL+one+"/pause", nil, token...), 200, "pause")
	expect(do(t, http.MethodPost, m.AdminURL+one+"/resume", nil, token...), 200, "resume")
	expect(do(t, http.MethodDelete, m.AdminURL+one, nil, token...), 204, "remove destination")
	expect(do(t, http.MethodGet, m.AdminURL+one, nil, token...), 404, "removed destination")
	expect(do(t, http.MethodPost, m.AdminURL+one+"/pause", nil, token...), 404, "pause a removed destination")

	tok := expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/tokens", []byte(`{"name": "cache", "scope": "read", "expires_in": "1h"}`), asJSON...), 201, "token").json(t)
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/tokens", []byte(`{"name": "", "scope": "all"}`), asJSON...), 422, "a bad token")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/tokens", nil, token...), 200, "tokens")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/tokens/"+tok["id"].(string), nil, token...), 200, "one token")
	expect(do(t, http.MethodPost, m.AdminURL+est+"/api/disable", nil, "Authorization", "Bearer "+tok["token"].(string)), 403, "a read token writing")
	expect(do(t, http.MethodDelete, m.AdminURL+"/admin/v1/tokens/"+tok["id"].(string), nil, token...), 204, "revoke")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/tokens/"+tok["id"].(string), nil, token...), 404, "a revoked token")
	expect(do(t, http.MethodGet, m.AdminURL+est+"/audit?limit=2", nil, token...), 200, "audit")
	expect(do(t, http.MethodGet, m.AdminURL+est+"/audit?before=x", nil, token...), 400, "a bad audit cursor")
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/audit", nil, token...), 200, "the platform's audit")
	keyed := append(asJSON, "Idempotency-Key", "token-1")
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/tokens", []byte(`{"name": "again", "scope": "read"}`), keyed...), 201, "a keyed token")
	expect(do(t, http.MethodPost, m.AdminURL+"/admin/v1/tokens", []byte(`{"name": "again", "scope": "read"}`), keyed...), 200, "a keyed token again")
	expect(m.admin(t, http.MethodPost, est+"/login-links", []byte(`{"name": "Marcel"}`)), 201, "login link")
	expect(m.admin(t, http.MethodPost, "/admin/v1/establishments/nowhere/login-links", nil), 404, "a login link to no establishment")

	// Refusals.
	expect(do(t, http.MethodGet, m.AdminURL+"/admin/v1/status", nil), 401, "no token")
	expect(m.admin(t, http.MethodGet, "/admin/v1/establishments/nowhere", nil), 404, "unknown establishment")
	expect(m.admin(t, http.MethodGet, "/admin/v1/establishments/Chez_Marcel", nil), 422, "invalid slug")
	expect(m.admin(t, http.MethodDelete, "/admin/v1/status", nil), 405, "another method")
	expect(m.admin(t, http.MethodGet, "/admin/v1/nothing", nil), 404, "unknown path")
	expect(m.admin(t, http.MethodPut, est, []byte(`{"name": "Chez Marcel", "business_type": "pub"}`)), 422, "wrong enum")
	expect(m.admin(t, http.MethodPut, est, []byte(`{"name": `)), 400, "cut JSON")
	expect(do(t, http.MethodPut, m.AdminURL+est+"/menu-redirect", []byte(`enabled`), append(token, "Content-Type", "text/plain")...), 415, "not JSON")

	// Every described operation was answered, and checked.
	d, err := adminDescription()
	if err != nil {
		t.Fatal(err)
	}
	answered := checker.operations()
	for path, item := range d.Doc().Paths.Map() {
		for method, op := range item.Operations() {
			if answered[op.OperationID] == 0 {
				t.Errorf("%s %s (%s): no answer checked", method, path, op.OperationID)
			}
		}
	}
	if answered[""] < 2 {
		t.Errorf("answers to paths and methods without an operation: %d checked, want at least 2", answered[""])
	}
}

// TestAdminCheckerRefusesWrongAnswers: answers that depart from the description, in their status,
// fields or values, or accepted requests it does not describe, are reported; right ones are not.
func TestAdminCheckerRefusesWrongAnswers(t *testing.T) {
	t.Parallel()
	d, err := adminDescription()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, sent string
		status                   int
		answer                   string
		wrong                    bool
	}{
		{"right", "GET", "/admin/v1/establishments", "", 200, `{"establishments":["chez-marcel"]}`, false},
		{"an extra field", "GET", "/admin/v1/establishments", "", 200, `{"establishments":[],"total":0}`, true},
		{"a wrong value", "GET", "/admin/v1/status", "", 200, `{"status":"fine"}`, true},
		{"an undescribed status", "POST", "/admin/v1/establishments/chez-marcel/activate", "", 418, `{"error":"Conflict"}`, true},
		{"an unknown error text", "GET", "/admin/v1/establishments/nowhere", "", 404, `{"error":"Nothing here"}`, true},
		{"a wrong answer to an unknown path", "GET", "/admin/v2", "", 200, `{}`, true},
		{"an accepted request undescribed", "PUT", "/admin/v1/establishments/chez-marcel/menu-redirect", `{"enabled": "yes"}`, 200,
			`{"result":{"slug":"chez-marcel","version":3,"events":1,"duplicate":false}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &adminChecker{d: d, answered: map[string]int{}}
			srv := httptest.NewServer(c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.answer))
			})))
			defer srv.Close()
			do(t, tc.method, srv.URL+tc.path, []byte(tc.sent), "Content-Type", "application/json")
			srv.Close() // every answer is checked
			if got := c.report(); (len(got) > 0) != tc.wrong {
				t.Errorf("problems %q, want some: %t", got, tc.wrong)
			}
		})
	}
}
