package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

type received struct {
	header http.Header
	body   []byte
}

// TestWebhookEndToEnd registers a real HTTPS receiver through the admin API, changes a menu, and
// checks the one signed delivery it gets names the revision the read API serves.
func TestWebhookEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var got []received
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = 2*time.Second, true, roots
	})
	demo, _ := os.ReadFile("demo.json")
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "http://example.com/hook"}`)); r.status != 422 {
		t.Errorf("http:// receiver: got %d %s, want 422", r.status, r.body)
	}
	if r := m.admin(t, http.MethodGet, "/admin/v1/establishments/chez-marcel/webhooks", nil); r.status != 200 || !bytes.Contains(r.body, []byte(`"endpoints":[]`)) {
		t.Errorf("endpoints of an establishment without any: got %d %s, want 200 and an empty list", r.status, r.body)
	}
	if r := m.admin(t, http.MethodGet, "/admin/v1/establishments/nowhere/webhooks", nil); r.status != 404 {
		t.Errorf("endpoints of an unknown establishment: got %d %s, want 404", r.status, r.body)
	}
	reg := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "`+receiver.URL+`/hook"}`))
	if reg.status != 201 {
		t.Fatalf("register: got %d %s", reg.status, reg.body)
	}
	ep := reg.json(t)["endpoint"].(map[string]any)
	id, secret := ep["id"].(string), ep["secret"].(string)

	// Two changes close together: one delivery, with the union of what changed.
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/la-carte/versions/hiver", []byte(
		`{"assets": [], "sections": [{"name": {"fr": "Plats"}, "items": [{"id": 1, "name": {"fr": "Cassoulet"}, "price": "22.00", "a_la_carte": true}]}]}`))
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/2027", []byte(
		`{"assets": [{"language_scope": "fr_en", "urls": ["https://cdn.example.fr/vins-2027.pdf"]}], "sections": []}`))
	eventually(t, "one delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 1 })
	// The signal goes out once the revision is stored: re-reading now gives it.
	served := m.get(t, est+"/menus", key)

	mu.Lock()
	d := got[0]
	mu.Unlock()
	var payload struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Establishment string   `json:"establishment"`
			Revision      int64    `json:"content_revision"`
			Resources     []string `json:"resources"`
		} `json:"data"`
	}
	if err := json.Unmarshal(d.body, &payload); err != nil {
		t.Fatalf("payload %s: %v", d.body, err)
	}
	if payload.Type != "establishment.content_updated" || payload.Data.Establishment != "chez-marcel" ||
		payload.Data.Revision != served.revision(t) ||
		!slices.Contains(payload.Data.Resources, "menus/la-carte") || !slices.Contains(payload.Data.Resources, "menus/vins") {
		t.Errorf("payload: got %s, want revision %d and both menus", d.body, served.revision(t))
	}
	// X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">, keyed by the secret's bytes.
	keyBytes, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	var ts, sig string
	for _, part := range strings.Split(d.header.Get("X-Service-Signature"), ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			ts = v
		}
		if v, ok := strings.CutPrefix(part, "v1="); ok && sig == "" {
			sig = v
		}
	}
	mac := hmac.New(sha256.New, keyBytes)
	mac.Write([]byte(ts + "." + string(d.body)))
	if want := hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Errorf("X-Service-Signature %q: want v1=%s", d.header.Get("X-Service-Signature"), want)
	}
	// The Standard Webhooks headers, verified by that specification's own library.
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.Verify(d.body, d.header); err != nil {
		t.Errorf("Standard Webhooks verification: %v (headers %v)", err, d.header)
	}
	if err := verifier.Verify([]byte(strings.Replace(string(d.body), "chez-marcel", "chez-marcelle", 1)), d.header); err == nil {
		t.Errorf("Standard Webhooks verification accepted an altered body")
	}

	// The delivery log, a ping, and the status output.
	log := m.admin(t, http.MethodGet, "/admin/v1/establishments/chez-marcel/webhooks/"+id+"/deliveries", nil)
	if log.status != 200 || !strings.Contains(string(log.body), `"status":"delivered"`) {
		t.Errorf("delivery log: got %d %s", log.status, log.body)
	}
	if ping := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks/"+id+"/ping", nil); ping.status != 200 {
		t.Errorf("ping: got %d %s", ping.status, ping.body)
	}
	if st := m.admin(t, http.MethodGet, "/admin/v1/status", nil); !strings.Contains(string(st.body), `"pending"`) {
		t.Errorf("status: got %s, want webhook counts", st.body)
	}
	if other := m.admin(t, http.MethodGet, "/admin/v1/establishments/other-place/webhooks/"+id+"/deliveries", nil); other.status != 404 {
		t.Errorf("another establishment's endpoint: got %d, want 404", other.status)
	}
	// The same through the command line.
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL, "PUBLISHER_ADMIN_TOKEN": testAdminToken}[k]
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"admin", "deliveries", "chez-marcel", id}, &out, io.Discard, env); err != nil || !strings.Contains(out.String(), payload.ID) {
		t.Errorf("admin deliveries: got %v %s, want the delivery %s", err, out.String(), payload.ID)
	}
	out.Reset()
	if err := run(t.Context(), []string{"admin", "webhooks", "chez-marcel"}, &out, io.Discard, env); err != nil || strings.Contains(out.String(), "whsec_") {
		t.Errorf("admin webhooks: got %v %s, want endpoints without secrets", err, out.String())
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 2 { // the delivery and the ping
		t.Errorf("got %d requests at the receiver, want 2 (one delivery for both changes, one ping)", n)
	}
}

// TestWebhookEndpointsHaveOneOwner: an endpoint lives in the webhook registry alone. Registering
// and removing one appends nothing to the event log, so that no crash can leave the two
// disagreeing; a registration retried under its idempotency key finds the endpoint it made, and
// the key sent again for another URL is refused.
func TestWebhookEndpointsHaveOneOwner(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.WebhookAllowPrivate = true })
	demo, _ := os.ReadFile("demo.json")
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	logged := func() uint64 {
		t.Helper()
		seq, err := m.Store.LastSequence(t.Context(), "chez-marcel")
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	listed := func() []string {
		t.Helper()
		var ids []string
		for _, e := range m.admin(t, http.MethodGet, "/admin/v1/establishments/chez-marcel", nil).json(t)["webhook_endpoints"].([]any) {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		return ids
	}
	before := logged()
	const path = "/admin/v1/establishments/chez-marcel/webhooks"
	register := func(url string) reply {
		return do(t, http.MethodPost, m.AdminURL+path, []byte(`{"url": "`+url+`"}`),
			"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json", "Idempotency-Key", "hook-1")
	}
	first := register("https://127.0.0.1:1/hook")
	if first.status != http.StatusCreated {
		t.Fatalf("register: got %d %s", first.status, first.body)
	}
	id := first.json(t)["endpoint"].(map[string]any)["id"].(string)
	if got := logged(); got != before {
		t.Errorf("registering appended to the log: sequence %d, was %d", got, before)
	}
	if got := listed(); !slices.Equal(got, []string{id}) {
		t.Errorf("endpoints of the establishment: got %v, want [%s]", got, id)
	}

	again := register("https://127.0.0.1:1/hook")
	if body := again.json(t); again.status != http.StatusCreated || body["endpoint"] != nil || body["result"].(map[string]any)["duplicate"] != true {
		t.Errorf("retried registration: got %d %s, want 201, a duplicate, no secret", again.status, again.body)
	}
	if reused := register("https://127.0.0.1:1/other"); reused.status != http.StatusUnprocessableEntity {
		t.Errorf("the key sent again for another URL: got %d %s, want 422", reused.status, reused.body)
	}
	if got := listed(); !slices.Equal(got, []string{id}) {
		t.Errorf("endpoints after the retries: got %v, want [%s]", got, id)
	}

	if r := m.admin(t, http.MethodDelete, path+"/"+id, nil); r.status != http.StatusOK {
		t.Fatalf("remove: got %d %s", r.status, r.body)
	}
	if got := listed(); len(got) != 0 {
		t.Errorf("endpoints after the removal: got %v, want none", got)
	}
	if r := m.admin(t, http.MethodDelete, path+"/"+id, nil); r.status != http.StatusNotFound {
		t.Errorf("remove again: got %d %s, want 404", r.status, r.body)
	}
	// The registration retried after the removal finds the endpoint removed: nothing comes back.
	if late := register("https://127.0.0.1:1/hook"); late.status != http.StatusCreated || late.json(t)["endpoint"] != nil {
		t.Errorf("registration retried after the removal: got %d %s, want 201, a duplicate", late.status, late.body)
	}
	if got := listed(); len(got) != 0 {
		t.Errorf("endpoints after a late retry: got %v, want none", got)
	}
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/nowhere/webhooks", []byte(`{"url": "https://127.0.0.1:1/hook"}`)); r.status != http.StatusNotFound {
		t.Errorf("register on an unknown establishment: got %d %s, want 404", r.status, r.body)
	}
	if got := logged(); got != before {
		t.Errorf("registering and removing appended to the log: sequence %d, was %d", got, before)
	}
}
