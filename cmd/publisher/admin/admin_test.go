package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
)

const testToken = "test-token-0123456789"

// memSecrets is a webhook registry in memory.
type memSecrets struct {
	mu        sync.Mutex
	m         map[string]string // secret by endpoint id
	endpoints map[string]domain.WebhookEndpoint
	owners    map[string]string // establishment by endpoint id
}

func (s *memSecrets) Create(_ context.Context, establishment, id, url, secret string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.endpoints[id]; ok {
		if s.owners[id] != establishment {
			return "", &app.Refusal{Kind: app.KindInvalid, Err: webhook.ErrInvalidEndpoint}
		}
		return e.URL, nil
	}
	if s.endpoints == nil {
		s.endpoints, s.owners = map[string]domain.WebhookEndpoint{}, map[string]string{}
	}
	s.m[id], s.endpoints[id], s.owners[id] = secret, domain.WebhookEndpoint{ID: id, URL: url}, establishment
	return "", nil
}

func (s *memSecrets) Remove(_ context.Context, establishment, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners[id] != establishment {
		return &app.Refusal{Kind: app.KindNotFound, Err: webhook.ErrEndpointNotFound}
	}
	delete(s.m, id)
	delete(s.endpoints, id)
	delete(s.owners, id)
	return nil
}

func (s *memSecrets) RotateSecret(_ context.Context, _, id, secret string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = secret
	return nil
}

func (s *memSecrets) Endpoints(_ context.Context, establishment string) ([]domain.WebhookEndpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.WebhookEndpoint
	for id, e := range s.endpoints {
		if s.owners[id] == establishment {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b domain.WebhookEndpoint) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

type fixture struct {
	store   *events.Store
	service *app.Commands
	secrets *memSecrets
	srv     *httptest.Server
	today   atomic.Pointer[domain.LocalDate] // the service's local date, everywhere
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	nc := natstest.Connect(tb, natstest.Start(tb))
	store, err := events.Open(context.Background(), nc, events.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fixture{store: store}
	f.today.Store(&domain.LocalDate{Year: 2026, Month: 11, Day: 22})
	secrets := &memSecrets{m: map[string]string{}}
	svc, err := app.New(app.Config{
		Log: store, Webhooks: secrets, Logger: logger,
		Clock: func(*time.Location) domain.LocalDate { return *f.today.Load() },
	})
	if err != nil {
		tb.Fatal(err)
	}
	api, err := NewAPI(Config{Commands: svc, Token: testToken, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(srv.Close)
	f.service, f.secrets, f.srv = svc, secrets, srv
	return f
}

func demoBody(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("../demo.json")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type response struct {
	status int
	body   map[string]any
	raw    string
}

func (f *fixture) call(tb testing.TB, method, path string, body []byte, hdr ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("%s %s: Content-Type = %q, want application/json", method, path, ct)
	}
	return r
}

func (f *fixture) records(tb testing.TB, slug string) int {
	tb.Helper()
	recs, err := f.store.History(context.Background(), slug)
	if err != nil {
		tb.Fatal(err)
	}
	return len(recs)
}

// mutate applies edit to the demo document decoded as generic JSON and re-encodes it.
func mutate(tb testing.TB, base []byte, edit func(m map[string]any)) []byte {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(base, &m); err != nil {
		tb.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func at(m map[string]any, path ...any) map[string]any {
	var cur any = m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur.(map[string]any)
}

func item(m map[string]any) map[string]any {
	return at(m, "menu_types", 0, "versions", 0, "sections", 0, "items", 0)
}

func TestPutEstablishmentRejectsBadInput(t *testing.T) {
	f := newFixture(t)
	base := demoBody(t)
	if r := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", base); r.status != http.StatusCreated {
		t.Fatalf("import demo: got %d %s, want 201", r.status, r.raw)
	}
	before := f.records(t, "chez-marcel")

	tests := []struct {
		name   string
		path   string // default chez-marcel
		body   []byte
		status int
		field  string // must appear in a details entry
	}{
		{name: "bad slug in path", path: "Chez.Marcel", body: base, status: 422, field: "slug"},
		{name: "slug in body differs", body: mutate(t, base, func(m map[string]any) { m["slug"] = "autre" }), status: 422, field: "slug"},
		{name: "bad slug in body", body: mutate(t, base, func(m map[string]any) { m["slug"] = "-x-" }), status: 422, field: "slug"},
		{name: "unknown top-level field", body: mutate(t, base, func(m map[string]any) { m["colour"] = "red" }), status: 400, field: "colour"},
		{name: "unknown nested field", body: mutate(t, base, func(m map[string]any) { item(m)["colour"] = "red" }), status: 400, field: "colour"},
		{name: "name wrong type", body: mutate(t, base, func(m map[string]any) { m["name"] = 42 }), status: 400, field: "name"},
		{name: "price as number", body: mutate(t, base, func(m map[string]any) { item(m)["price"] = 12.5 }), status: 400, field: "price"},
		{name: "a_la_carte as string", body: mutate(t, base, func(m map[string]any) { item(m)["a_la_carte"] = "yes" }), status: 400, field: "a_la_carte"},
		{name: "business_hours as object", body: mutate(t, base, func(m map[string]any) { m["business_hours"] = map[string]any{} }), status: 400, field: "business_hours"},
		{name: "open time 25:00", body: mutate(t, base, func(m map[string]any) { at(m, "business_hours", 0)["open_time"] = "25:00" }), status: 422, field: "business_hours[0].open_time"},
		{name: "close time 7:3", body: mutate(t, base, func(m map[string]any) { at(m, "business_hours", 1)["close_time"] = "7:3" }), status: 422, field: "business_hours[1].close_time"},
		{name: "day in english", body: mutate(t, base, func(m map[string]any) { at(m, "business_hours", 0)["open_day"] = "monday" }), status: 422, field: "business_hours[0].open_day"},
		{name: "bad date", body: mutate(t, base, func(m map[string]any) { at(m, "special_hours", 0)["start_date"] = "2026-02-30" }), status: 422, field: "special_hours[0].start_date"},
		{name: "end before start", body: mutate(t, base, func(m map[string]any) { at(m, "special_hours", 1)["end_date"] = "2026-12-01" }), status: 422, field: "special_hours[1].end_date"},
		{name: "price one decimal", body: mutate(t, base, func(m map[string]any) { item(m)["price"] = "12.5" }), status: 422, field: "price"},
		{name: "negative price", body: mutate(t, base, func(m map[string]any) { item(m)["price"] = "-12.50" }), status: 422, field: "price"},
		{name: "a la carte without price", body: mutate(t, base, func(m map[string]any) { item(m)["price"] = nil }), status: 422, field: "items[0].price"},
		{name: "unknown business_type", body: mutate(t, base, func(m map[string]any) { m["business_type"] = "nightclub" }), status: 422, field: "business_type"},
		{name: "unknown language scope", body: mutate(t, base, func(m map[string]any) {
			at(m, "menu_types", 0, "versions", 0, "assets", 0)["language_scope"] = "de"
		}), status: 422, field: "assets[0].language_scope"},
		{name: "asset without url", body: mutate(t, base, func(m map[string]any) {
			at(m, "menu_types", 0, "versions", 0, "assets", 0)["urls"] = []any{}
		}), status: 422, field: "assets[0].urls"},
		{name: "asset ftp url", body: mutate(t, base, func(m map[string]any) {
			at(m, "menu_types", 0, "versions", 0, "assets", 0)["urls"] = []any{"ftp://x/y.pdf"}
		}), status: 422, field: "assets[0].urls[0]"},
		{name: "uploaded menu with sections", body: mutate(t, base, func(m map[string]any) {
			at(m, "menu_types", 2, "versions", 0)["sections"] = at(m, "menu_types", 0, "versions", 0)["sections"]
		}), status: 422, field: "menu_types[2].versions[0].sections"},
		{name: "duplicate menu type", body: mutate(t, base, func(m map[string]any) { at(m, "menu_types", 1)["slug"] = "la-carte" }), status: 422, field: "menu_types[1].slug"},
		{name: "unknown rotation", body: mutate(t, base, func(m map[string]any) { at(m, "menu_types", 0)["rotation"] = "hourly" }), status: 422, field: "menu_types[0].rotation"},
		{name: "unknown kind", body: mutate(t, base, func(m map[string]any) { at(m, "menu_types", 0)["kind"] = "buffet" }), status: 422, field: "menu_types[0].kind"},
		{name: "dated version without date", body: mutate(t, base, func(m map[string]any) { at(m, "menu_types", 1, "versions", 0)["reference_date"] = nil }), status: 422, field: "reference_date"},
		{name: "text without fr", body: mutate(t, base, func(m map[string]any) { item(m)["name"] = map[string]any{"en": "Egg"} }), status: 422, field: "items[0].name.fr"},
		{name: "latitude out of range", body: mutate(t, base, func(m map[string]any) { at(m, "location")["latitude"] = 91 }), status: 422, field: "location.latitude"},
		{name: "bad phone", body: mutate(t, base, func(m map[string]any) { at(m, "contact")["phone_number"] = "01 42 00 00 00" }), status: 422, field: "contact.phone_number"},
		{name: "bad email", body: mutate(t, base, func(m map[string]any) { at(m, "contact")["email"] = "not-an-address" }), status: 422, field: "contact.email"},
		{name: "bad website url", body: mutate(t, base, func(m map[string]any) { m["website_url"] = "javascript:alert(1)" }), status: 422, field: "website_url"},
		{name: "unknown timezone", body: mutate(t, base, func(m map[string]any) { m["timezone"] = "Mars/Olympus" }), status: 422, field: "timezone"},
		{name: "back to draft", body: mutate(t, base, func(m map[string]any) { m["status"] = "draft" }), status: 422, field: "status"},
		{name: "unknown status", body: mutate(t, base, func(m map[string]any) { m["status"] = "archived" }), status: 422, field: "status"},
		{name: "empty name", body: mutate(t, base, func(m map[string]any) { m["name"] = "" }), status: 422, field: "name"},
		{name: "invalid JSON", body: []byte(`{"slug": "chez-marcel",`), status: 400, field: "body"},
		{name: "empty body", body: nil, status: 400, field: "body"},
		{name: "trailing data", body: append(append([]byte{}, base...), []byte(` {}`)...), status: 400, field: "body"},
		{name: "array instead of object", body: []byte(`[]`), status: 400, field: "body"},
		{name: "oversized body", body: bytes.Repeat([]byte(" "), MaxBodyBytes+1), status: 413, field: "body"},
		{name: "invalid UTF-8", body: bytes.Replace(base, []byte("Chez Marcel"), []byte("Chez \xff\xfe"), 1), status: 400, field: "UTF-8"},
		{name: "url with a port and no host", body: mutate(t, base, func(m map[string]any) { m["website_url"] = "https://:443/a" }), status: 422, field: "website_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = "chez-marcel"
			}
			r := f.call(t, http.MethodPut, "/admin/v1/establishments/"+path, tt.body)
			if r.status != tt.status {
				t.Fatalf("got status %d (%s), want %d", r.status, r.raw, tt.status)
			}
			details, _ := r.body["details"].([]any)
			if r.body["error"] == "" || !anyContains(details, tt.field) {
				t.Errorf("got body %s, want an error naming %q", r.raw, tt.field)
			}
			if got := f.records(t, "chez-marcel"); got != before {
				t.Errorf("got %d records after a rejected import, want %d (log unchanged)", got, before)
			}
		})
	}
	if n := len(tests); n < 30 {
		t.Errorf("only %d bad inputs, want at least 30", n)
	}

	// Every unknown field has a details entry of its own.
	r := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", mutate(t, base, func(m map[string]any) {
		m["colour"] = "red"
		at(m, "contact")["fax"] = "x"
	}))
	if details, _ := r.body["details"].([]any); r.status != 400 || len(details) != 2 {
		t.Errorf("two unknown fields: got %d %s, want 400 with two details", r.status, r.raw)
	}
}

func anyContains(details []any, field string) bool {
	for _, d := range details {
		if s, ok := d.(string); ok && strings.Contains(s, field) {
			return true
		}
	}
	return false
}

func TestReimportAppendsNothing(t *testing.T) {
	f := newFixture(t)
	body := demoBody(t)
	first := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", body)
	if first.status != http.StatusCreated || first.body["api_key"] == nil {
		t.Fatalf("first import: got %d %s, want 201 with an api_key", first.status, first.raw)
	}
	n := f.records(t, "chez-marcel")
	second := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", body)
	if second.status != http.StatusOK || second.body["api_key"] != nil {
		t.Fatalf("second import: got %d %s, want 200 without a key", second.status, second.raw)
	}
	if got := f.records(t, "chez-marcel"); got != n {
		t.Errorf("got %d records after re-import, want %d", got, n)
	}
	// What GET shows can be imported back unchanged.
	got := f.call(t, http.MethodGet, "/admin/v1/establishments/chez-marcel", nil)
	snap, _ := json.Marshal(got.body["establishment"])
	if r := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", snap); r.status != http.StatusOK {
		t.Fatalf("re-import of GET: got %d %s", r.status, r.raw)
	}
	if got := f.records(t, "chez-marcel"); got != n {
		t.Errorf("got %d records after importing the exported state, want %d", got, n)
	}
	if strings.Contains(got.raw, "key_hash") || strings.Contains(got.raw, "pk_") {
		t.Errorf("GET shows key material: %s", got.raw)
	}
}

func TestSameCommandIDAppliedOnce(t *testing.T) {
	f := newFixture(t)
	f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demoBody(t))
	n := f.records(t, "chez-marcel")
	// Regenerating a key is not idempotent by itself: only the command id makes a retry safe.
	path := "/admin/v1/establishments/chez-marcel/api/regenerate-key"
	a := f.call(t, http.MethodPost, path, nil, "Idempotency-Key", "req-42")
	b := f.call(t, http.MethodPost, path, nil, "Idempotency-Key", "req-42")
	if a.status != 200 || b.status != 200 {
		t.Fatalf("got %d and %d, want 200 twice", a.status, b.status)
	}
	if a.body["api_key"] == nil {
		t.Errorf("first call: got %s, want a key", a.raw)
	}
	if dup := b.body["result"].(map[string]any)["duplicate"]; dup != true || b.body["api_key"] != nil {
		t.Errorf("second call: got %s, want duplicate=true and no key", b.raw)
	}
	if got := f.records(t, "chez-marcel"); got != n+1 {
		t.Errorf("got %d records, want %d (one application)", got, n+1)
	}
	// Another key is another command.
	if c := f.call(t, http.MethodPost, path, nil, "Idempotency-Key", "req-43"); c.body["api_key"] == nil {
		t.Errorf("new idempotency key: got %s, want a new key", c.raw)
	}
}

// An Idempotency-Key names one request: its method, path and body. A retry is answered as a
// duplicate before being decided again; the key on another establishment or operation is
// another command; the key with another body is refused; a malformed key is refused.
func TestIdempotencyKeyScope(t *testing.T) {
	f := newFixture(t)
	f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demoBody(t))
	other := bytes.Replace(demoBody(t), []byte(`"chez-marcel"`), []byte(`"la-cave"`), 1)
	f.call(t, http.MethodPut, "/admin/v1/establishments/la-cave", other)
	marcel, cave := f.records(t, "chez-marcel"), f.records(t, "la-cave")

	// A retry of a command that changed the state it was decided on: still a duplicate, not 409.
	disable := "/admin/v1/establishments/chez-marcel/api/disable"
	if got := f.call(t, http.MethodPost, disable, nil, "Idempotency-Key", "k1"); got.status != 200 {
		t.Fatalf("disable: got %d %s", got.status, got.raw)
	}
	enable := "/admin/v1/establishments/chez-marcel/api/enable"
	first := f.call(t, http.MethodPost, enable, nil, "Idempotency-Key", "k2")
	retry := f.call(t, http.MethodPost, enable, nil, "Idempotency-Key", "k2")
	if first.status != 200 || first.body["api_key"] == nil {
		t.Fatalf("enable: got %d %s, want 200 with a key", first.status, first.raw)
	}
	if res, _ := retry.body["result"].(map[string]any); retry.status != 200 || res["duplicate"] != true || retry.body["api_key"] != nil {
		t.Errorf("enable retried: got %d %s, want 200, duplicate and no key", retry.status, retry.raw)
	}
	if res, _ := retry.body["result"].(map[string]any); res["version"] != first.body["result"].(map[string]any)["version"] {
		t.Errorf("enable retried: version %v, want the first application's %v", res["version"], first.body["result"].(map[string]any)["version"])
	}

	// The same key on another establishment is another command, applied.
	got := f.call(t, http.MethodPost, "/admin/v1/establishments/la-cave/api/disable", nil, "Idempotency-Key", "k1")
	if res, _ := got.body["result"].(map[string]any); got.status != 200 || res["duplicate"] != false || res["events"] != 1.0 {
		t.Errorf("same key on another establishment: got %d %s, want it applied", got.status, got.raw)
	}

	// The same key with another body: 422, nothing appended.
	redirect := "/admin/v1/establishments/chez-marcel/menu-redirect"
	f.call(t, http.MethodPut, redirect, []byte(`{"enabled":false}`), "Idempotency-Key", "k3")
	got = f.call(t, http.MethodPut, redirect, []byte(`{"enabled":true}`), "Idempotency-Key", "k3")
	if got.status != 422 || !strings.Contains(got.raw, "Idempotency-Key") {
		t.Errorf("same key, other body: got %d %s, want 422 naming Idempotency-Key", got.status, got.raw)
	}

	// Malformed keys: 400 naming the header, nothing appended.
	for _, k := range []string{strings.Repeat("k", 256), "with space", "é"} {
		got := f.call(t, http.MethodPost, disable, nil, "Idempotency-Key", k)
		if got.status != 400 || !strings.Contains(got.raw, "Idempotency-Key") {
			t.Errorf("key %.20q: got %d %s, want 400 naming Idempotency-Key", k, got.status, got.raw)
		}
	}
	if got := f.call(t, http.MethodPost, disable, nil, "Idempotency-Key", strings.Repeat("k", 255)); got.status != 200 {
		t.Errorf("key of 255 characters: got %d %s, want 200", got.status, got.raw)
	}

	// disable k1, enable k2, redirect k3 and disable with the long key on chez-marcel; disable
	// k1 on la-cave.
	if got := f.records(t, "chez-marcel"); got != marcel+4 {
		t.Errorf("chez-marcel: got %d records, want %d", got, marcel+4)
	}
	if got := f.records(t, "la-cave"); got != cave+1 {
		t.Errorf("la-cave: got %d records, want %d", got, cave+1)
	}
}

func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	f := newFixture(t)
	f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demoBody(t))
	// Two services share one log, each with its own cache: every write of one makes the other's
	// cache stale, so they race on the expected sequence.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	other, err := app.New(app.Config{Log: f.store, Webhooks: f.secrets, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	const perWriter = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*perWriter)
	for w, svc := range []*app.Commands{f.service, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				v := domain.VersionInput{ID: fmt.Sprintf("v-%c-%d", 'a'+w, i), Assets: []domain.AssetInput{
					{LanguageScope: "fr_en", URLs: []string{"https://cdn.example.fr/vins.pdf"}},
				}}
				if _, err := svc.PublishVersion(context.Background(), app.Request{Slug: "chez-marcel"}, "vins", v); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("write failed: %v", err)
	}
	st, err := f.service.Get(context.Background(), "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}
	versions := -1
	for _, mt := range st.Establishment.MenuTypes {
		if mt.Slug == "vins" {
			versions = len(mt.Versions)
		}
	}
	if versions != 1+2*perWriter {
		t.Errorf("got %d versions of vins, want %d: an update was lost", versions, 1+2*perWriter)
	}
}

func TestCommands(t *testing.T) {
	f := newFixture(t)
	est := "/admin/v1/establishments/chez-marcel"
	if r := f.call(t, http.MethodPost, est+"/activate", nil); r.status != 404 {
		t.Errorf("activate unknown: got %d, want 404", r.status)
	}
	draft := mutate(t, demoBody(t), func(m map[string]any) {
		m["status"] = "draft"
		m["settings"] = map[string]any{"public_api_enabled": false}
	})
	if r := f.call(t, http.MethodPut, est, draft); r.status != 201 || r.body["api_key"] != nil {
		t.Fatalf("import draft: got %d %s", r.status, r.raw)
	}
	steps := []struct {
		method, path, body string
		status             int
		key                bool
	}{
		{"POST", est + "/api/regenerate-key", "", 409, false},
		{"POST", est + "/api/enable", "", 200, true},
		{"POST", est + "/api/enable", "", 409, false},
		{"POST", est + "/api/regenerate-key", "", 200, true},
		{"POST", est + "/activate", "", 200, false},
		{"POST", est + "/api/disable", "", 200, false},
		{"PUT", est + "/menu-redirect", `{"enabled": true}`, 200, false},
		{"PUT", est + "/menu-redirect", `{}`, 422, false},
		{"PUT", est + "/menu-types/la-carte/versions/hiver", `{"assets": [{"language_scope": "fr", "urls": ["https://x.example/h.pdf"]}], "sections": []}`, 200, false},
		{"PUT", est + "/menu-types/la-carte/versions/hiver", `{"id": "ete", "assets": [], "sections": []}`, 422, false},
		{"PUT", est + "/menu-types/nope/versions/v1", `{"assets": [], "sections": []}`, 404, false},
		{"PUT", est + "/menu-types/vins/versions/v2", `{"assets": [], "sections": [{"name": {"fr": "Rouges"}, "items": []}]}`, 422, false},
		{"DELETE", est + "/menu-types/la-carte/versions/hiver", "", 200, false},
		{"DELETE", est + "/menu-types/la-carte/versions/hiver", "", 404, false},
		{"POST", est + "/webhooks", `{"url": "http://insecure.example.com/hook"}`, 422, false},
		{"DELETE", est + "/webhooks/wh_unknown", "", 404, false},
		{"PATCH", est, "", 405, false},
		{"GET", "/admin/v1/nothing-here", "", 404, false},
	}
	for _, s := range steps {
		var body []byte
		if s.body != "" {
			body = []byte(s.body)
		}
		r := f.call(t, s.method, s.path, body)
		if r.status != s.status {
			t.Errorf("%s %s: got %d %s, want %d", s.method, s.path, r.status, r.raw, s.status)
		}
		if _, ok := r.body["api_key"]; ok != s.key {
			t.Errorf("%s %s: got api_key present=%t, want %t", s.method, s.path, ok, s.key)
		}
	}
	reg := f.call(t, http.MethodPost, est+"/webhooks", []byte(`{"url": "https://hooks.example.com/in"}`))
	ep, _ := reg.body["endpoint"].(map[string]any)
	if reg.status != 201 || ep == nil || !strings.HasPrefix(ep["secret"].(string), "whsec_") {
		t.Fatalf("register webhook: got %d %s", reg.status, reg.raw)
	}
	if _, ok := f.secrets.m[ep["id"].(string)]; !ok {
		t.Errorf("secret of %s not stored", ep["id"])
	}
	st := f.call(t, http.MethodGet, est, nil)
	if strings.Contains(st.raw, ep["secret"].(string)) {
		t.Errorf("GET shows the webhook secret")
	}
	recs, _ := f.store.History(context.Background(), "chez-marcel")
	for _, r := range recs {
		raw, _ := events.Encode(r)
		if bytes.Contains(raw, []byte(ep["secret"].(string))) {
			t.Errorf("the webhook secret is in the event log at sequence %d", r.Sequence)
		}
	}
}

func TestAdminNeedsToken(t *testing.T) {
	f := newFixture(t)
	for _, auth := range []string{"", "Bearer wrong-token-000000000", testToken, "Basic " + testToken, "Bearer ", "Bearer " + testToken + "x"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/admin/v1/establishments", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || string(body) != "{\"error\":\"Unauthorized\"}\n" {
			t.Errorf("Authorization %q: got %d %s, want 401 Unauthorized", auth, resp.StatusCode, body)
		}
	}
	// The scheme name is case-insensitive.
	for _, auth := range []string{"bearer " + testToken, "BEARER  " + testToken} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/admin/v1/establishments", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("Authorization %q: got %d, want 200", auth, resp.StatusCode)
		}
	}
}
