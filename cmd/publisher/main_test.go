package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
	"github.com/opencarte/publisher/webhook"
)

const testAdminToken = "e2e-admin-token-0123456789"

// testSecretKeys is the master key of webhook signing secrets of the processes a test starts
// on an external NATS, as a deployment gives all its processes the same one.
var testSecretKeys = webhook.NewMasterKey()

// openMain starts the whole binary's wiring on an embedded NATS server in dir, on random ports,
// with the local date fixed.
// Quotas are off unless an option sets them: the tests poll the read API in loops.
func openMain(tb testing.TB, dir, today string, options ...func(*Config)) *Main {
	tb.Helper()
	return startMain(tb, testMain(dir, today, options...))
}

// testMain is the Main openMain starts, for a test to change before it starts it with startMain.
func testMain(dir, today string, options ...func(*Config)) *Main {
	m := &Main{Config: Config{
		DataDir:      dir,
		NATSListen:   "127.0.0.1:-1",
		HTTPAddr:     "127.0.0.1:0",
		AdminAddr:    "127.0.0.1:0",
		AdminToken:   testAdminToken,
		Today:        today,
		ClockEvery:   time.Hour, // tests tick the clock themselves
		Replicas:     1,
		DuplicateTTL: time.Hour,
		KeyQuota:     -1,
		IPQuota:      -1,
	}}
	for _, o := range options {
		o(&m.Config)
	}
	return m
}

// startMain opens m, and closes it when the test ends. Every answer of its admin API is checked
// against the admin API's description (see checkAdmin), unless the test checks it itself.
func startMain(tb testing.TB, m *Main) *Main {
	tb.Helper()
	if m.wrapAdmin == nil {
		checkAdmin(tb, m)
	}
	if err := m.Open(context.Background()); err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(m.Close)
	return m
}

// jetStream returns a JetStream context on m's connection.
func (m *Main) jetStream(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	js, err := jetstream.New(m.Conn)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(tb testing.TB) map[string]any {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		tb.Fatalf("body %q: %v", r.body, err)
	}
	return v
}

func (r reply) revision(tb testing.TB) int64 {
	tb.Helper()
	rev, ok := r.json(tb)["content_revision"].(float64)
	if !ok {
		tb.Fatalf("no content_revision in %s", r.body)
	}
	return int64(rev)
}

func do(tb testing.TB, method, url string, body []byte, header ...string) reply {
	tb.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	r, _ := send(tb, req)
	return r
}

func send(tb testing.TB, req *http.Request) (reply, *http.Response) {
	tb.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}, resp
}

// read sends a request to the read API and checks the answer against the published OpenAPI
// description, so that the description and the code cannot drift apart.
func (m *Main) read(tb testing.TB, method, path string, header ...string) reply {
	tb.Helper()
	req, err := http.NewRequest(method, m.HTTPURL+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	r, resp := send(tb, req)
	openapitest.Validate(tb, req, resp, r.body)
	return r
}

func (m *Main) admin(tb testing.TB, method, path string, body []byte) reply {
	tb.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return do(tb, method, m.AdminURL+path+sep+"wait=true", body, "Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json")
}

func (m *Main) get(tb testing.TB, path, key string) reply {
	tb.Helper()
	if key == "" {
		return m.read(tb, http.MethodGet, path)
	}
	return m.read(tb, http.MethodGet, path, "X-Api-Key", key)
}

// eventually polls f until it returns true or the deadline passes.
func eventually(tb testing.TB, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func keyOf(tb testing.TB, r reply) string {
	tb.Helper()
	k, ok := r.json(tb)["api_key"].(string)
	if !ok || !strings.HasPrefix(k, "pk_") {
		tb.Fatalf("no api_key in %d %s", r.status, r.body)
	}
	return k
}

const est = "/api/v1/establishments/chez-marcel"

func TestEndToEnd(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}

	// Import, then read every resource.
	r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	if r.status != http.StatusCreated {
		t.Fatalf("import: got %d %s", r.status, r.body)
	}
	key := keyOf(t, r)
	var first reply
	eventually(t, "demo served", func() bool { first = m.get(t, est, key); return first.status == 200 })
	rev1 := first.revision(t)
	for _, path := range []string{est, est + "/hours", est + "/menus", est + "/menus?locale=en", est + "/menus/la-carte", est + "/menus/menu-du-jour"} {
		got := m.get(t, path, key)
		if got.status != 200 || got.revision(t) != rev1 || got.header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: got %d rev %s, want 200 at revision %d", path, got.status, got.body, rev1)
		}
	}
	// The JSON-LD, checked against the description as every answer here is: no revision in
	// its body, the establishment's in its header.
	for path, want := range map[string]string{est + "/jsonld": `"inLanguage":"fr"`, est + "/jsonld?locale=en": `"name":"Leeks vinaigrette"`} {
		got := m.get(t, path, key)
		if got.status != 200 || got.header.Get("Content-Type") != "application/ld+json" || got.header.Get("Content-Revision") != strconv.FormatInt(rev1, 10) ||
			!bytes.HasPrefix(got.body, []byte(`{"@context":"https://schema.org","@type":"Restaurant","name":"Chez Marcel"`)) || !bytes.Contains(got.body, []byte(want)) {
			t.Errorf("GET %s: got %d %s revision %s: %s", path, got.status, got.header.Get("Content-Type"), got.header.Get("Content-Revision"), got.body)
		}
	}
	if got := m.get(t, est+"/menus/menu-du-jour", key); !bytes.Contains(got.body, []byte("Poireaux vinaigrette")) {
		t.Errorf("menu du jour of 2026-11-22: got %s", got.body)
	}
	if got := m.get(t, est+"/menus/traiteur", key); got.status != 404 {
		t.Errorf("menu type without web delivery: got %d, want 404", got.status)
	}
	if got := m.get(t, est, ""); got.status != 401 || string(got.body) != `{"error":"Unauthorized"}` {
		t.Errorf("no key: got %d %s", got.status, got.body)
	}
	if got := m.read(t, http.MethodGet, "/r/menus?establishment=chez-marcel&menu_type=la-carte&locale=en"); got.status != 302 ||
		got.header.Get("Location") != "https://cdn.chez-marcel.example.fr/carte-en-1.jpg" {
		t.Errorf("/r/menus en: got %d Location %q", got.status, got.header.Get("Location"))
	}
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.status != 302 ||
		got.header.Get("Location") != "https://cdn.chez-marcel.example.fr/carte-complete.pdf" {
		t.Errorf("/r/master_menu: got %d Location %q", got.status, got.header.Get("Location"))
	}

	// Re-importing the same snapshot changes nothing: same revision, same bytes.
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo); r.status != 200 {
		t.Fatalf("re-import: got %d %s", r.status, r.body)
	}
	if got := m.get(t, est, key); got.revision(t) != rev1 || !bytes.Equal(got.body, first.body) {
		t.Errorf("after re-import: got revision %d, want %d unchanged", got.revision(t), rev1)
	}

	// A change raises the revision of every resource and changes the bytes.
	before := m.get(t, est+"/menus/la-carte", key)
	version := []byte(`{"assets": [], "sections": [{"name": {"fr": "Plats"}, "position": 1, "items": [
		{"id": 1, "name": {"fr": "Pot-au-feu", "en": "Beef stew"}, "description": null, "price": "19.00", "a_la_carte": true}]}]}`)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/la-carte/versions/hiver-2026", version); r.status != 200 {
		t.Fatalf("publish: got %d %s", r.status, r.body)
	}
	var after reply
	eventually(t, "new version served", func() bool { after = m.get(t, est+"/menus/la-carte", key); return after.revision(t) > rev1 })
	rev2 := after.revision(t)
	if bytes.Equal(after.body, before.body) || !bytes.Contains(after.body, []byte("Pot-au-feu")) {
		t.Errorf("after publish: got %s", after.body)
	}
	if got := m.get(t, est+"/hours", key); got.revision(t) != rev2 {
		t.Errorf("hours revision: got %d, want %d (same across resources)", got.revision(t), rev2)
	}

	// Disabling the API hides everything; a new key replaces the old one.
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/disable", nil); r.status != 200 {
		t.Fatalf("disable: got %d %s", r.status, r.body)
	}
	eventually(t, "API disabled", func() bool { return m.get(t, est, key).status == 404 })
	for _, p := range []string{est + "/hours", est + "/menus", est + "/menus/la-carte"} {
		if got := m.get(t, p, key); got.status != 404 || string(got.body) != `{"error":"Not found"}` {
			t.Errorf("GET %s with the API disabled: got %d %s, want 404 Not found", p, got.status, got.body)
		}
	}
	enabled := keyOf(t, m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/enable", nil))
	eventually(t, "API enabled", func() bool { return m.get(t, est, enabled).status == 200 })
	newKey := keyOf(t, m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/regenerate-key", nil))
	eventually(t, "new key works", func() bool { return m.get(t, est, newKey).status == 200 })
	for _, old := range []string{key, enabled} {
		if got := m.get(t, est, old); got.status != 401 {
			t.Errorf("old key: got %d, want 401", got.status)
		}
	}
	if got := m.get(t, est, newKey); got.revision(t) != rev2 {
		t.Errorf("key changes moved the revision: got %d, want %d", got.revision(t), rev2)
	}

	// The date crosses midnight: the daily menu rotates and the revision rises.
	m.Clock.Set(domain.LocalDate{Year: 2026, Month: 11, Day: 23})
	var rotated reply
	eventually(t, "daily menu rotated", func() bool {
		if _, err := m.ClockRole.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		rotated = m.get(t, est+"/menus/menu-du-jour", newKey)
		return bytes.Contains(rotated.body, []byte("Céleri rémoulade"))
	})
	rev3 := rotated.revision(t)
	if rev3 <= rev2 {
		t.Errorf("after midnight: got revision %d, want more than %d", rev3, rev2)
	}
	// A second tick on the same day appends nothing. (The log, not the projector's position, is
	// the reference: the rotated menu can be served before the position moves past its record.)
	dayStarted, err := m.Store.LastSequence(context.Background(), "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ClockRole.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last, _ := m.Store.LastSequence(context.Background(), "chez-marcel"); last > dayStarted {
		t.Errorf("second tick of the day appended sequence %d after %d", last, dayStarted)
	}
}

// TestRestartKeepsDocuments stops the whole process state and opens it again on the same data
// directory: the projector replays the log and serves the same bytes at the same revision.
func TestRestartKeepsDocuments(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	demo, _ := os.ReadFile("demo.json")
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	var want [][]byte
	paths := []string{est, est + "/hours", est + "/menus?locale=en", est + "/menus/la-carte?locale=fr"}
	eventually(t, "served", func() bool { return m.get(t, est, key).status == 200 })
	for _, p := range paths {
		want = append(want, m.get(t, p, key).body)
	}
	m.Close()

	m2 := openMain(t, dir, "2026-11-22")
	eventually(t, "served after restart", func() bool { return m2.get(t, est, key).status == 200 })
	for i, p := range paths {
		if got := m2.get(t, p, key).body; !bytes.Equal(got, want[i]) {
			t.Errorf("GET %s after restart:\ngot  %s\nwant %s", p, got, want[i])
		}
	}

	// The projector resumed where it stopped, and projects what comes next.
	before := m2.get(t, est, key).revision(t)
	renamed := bytes.Replace(demo, []byte(`"Chez Marcel"`), []byte(`"Chez Marcel et fils"`), 1)
	m2.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel?wait=true", renamed)
	if got := m2.get(t, est, key); got.revision(t) <= before || !bytes.Contains(got.body, []byte("Marcel et fils")) {
		t.Errorf("after an edit: got revision %d (was %d), body %.200s", got.revision(t), before, got.body)
	}
	status := m2.admin(t, http.MethodGet, "/admin/v1/status", nil).json(t)
	if status["projected_sequence"] != status["log_sequence"] {
		t.Errorf("status: projected %v of %v", status["projected_sequence"], status["log_sequence"])
	}
	mirror, _ := status["mirror"].(map[string]any)
	memory, _ := status["memory"].(map[string]any)
	if mirror["establishments"] != 1.0 || mirror["document_bytes"].(float64) <= 0 || memory["heap_live_bytes"].(float64) <= 0 {
		t.Errorf("status: mirror %v, memory %v", mirror, memory)
	}
}

// TestDemoCommand runs `serve --demo` as a user would and uses the key it prints.
func TestDemoCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	args := []string{"serve", "--demo", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0"}
	go func() { done <- run(ctx, args, out, io.Discard, func(string) string { return "" }) }()
	var key, url, docs, adminDocs string
	eventually(t, "demo printed its key and reference pages", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if k, ok := strings.CutPrefix(line, "API key: "); ok {
				key = k
			}
			if f := strings.Fields(line); len(f) == 6 && f[0] == "curl" && strings.HasSuffix(f[5], "/hours") {
				url = f[5]
			}
			if d, ok := strings.CutPrefix(line, "API reference, with every operation and answer: "); ok {
				docs = d
			}
			if f := strings.Fields(line); len(f) > 0 && f[0] == "Admin" && strings.HasSuffix(f[len(f)-1], "/admin/docs") {
				adminDocs = f[len(f)-1]
			}
		}
		return key != "" && url != "" && docs != "" && adminDocs != ""
	})
	for _, page := range []string{docs, adminDocs} {
		if got := do(t, http.MethodGet, page, nil); got.status != 200 || !strings.HasPrefix(got.header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s, printed by the demo: got %d %s", page, got.status, got.header.Get("Content-Type"))
		}
	}
	got := do(t, http.MethodGet, url, nil, "X-Api-Key", key)
	if got.status != 200 || !bytes.Contains(got.body, []byte(`"business_hours"`)) {
		t.Errorf("GET %s with the printed key: got %d %s", url, got.status, got.body)
	}
	// The redirects land on files the service itself serves.
	base := strings.TrimSuffix(url, "/api/v1/establishments/chez-marcel/hours")
	for _, r := range []string{"/r/master_menu?establishment=chez-marcel", "/r/menus?establishment=chez-marcel&menu_type=la-carte&locale=en"} {
		redirect := do(t, http.MethodGet, base+r, nil)
		loc := redirect.header.Get("Location")
		if redirect.status != 302 || !strings.HasPrefix(loc, base+"/files/sha256-") {
			t.Errorf("GET %s: got %d to %q, want a file of %s", r, redirect.status, loc, base)
			continue
		}
		if f := do(t, http.MethodGet, loc, nil); f.status != 200 || !slices.Contains([]string{"application/pdf", "image/png"}, f.header.Get("Content-Type")) {
			t.Errorf("GET %s: got %d %q", loc, f.status, f.header.Get("Content-Type"))
		}
	}
	// Starting the demo spends nothing of the key's hourly quota: this is its first request.
	if rl := got.header.Get("RateLimit"); rl != `"key";r=119;t=30` {
		t.Errorf("RateLimit of the first request with the printed key = %q, want the key's 120 less this one", rl)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BenchmarkCommandToServed measures the time from an acknowledged command to its bytes being
// served by the read API's mirror, and reports p50 and p99.
func BenchmarkCommandToServed(b *testing.B) {
	m := openMain(b, b.TempDir(), "2026-11-22")
	demo, _ := os.ReadFile("demo.json")
	key := keyOf(b, m.admin(b, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		price := fmt.Sprintf("%d.%02d", 10+i/100, i%100)
		in := domain.VersionInput{ID: "bench", Assets: []domain.AssetInput{}, Sections: []domain.SectionInput{}}
		if err := json.Unmarshal([]byte(`{"id":"bench","assets":[],"sections":[{"name":{"fr":"Plats"},"items":[{"id":1,"name":{"fr":"Plat"},"price":"`+price+`","a_la_carte":true}]}]}`), &in); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := m.Commands.PublishVersion(ctx, app.Request{Slug: "chez-marcel"}, "la-carte", in)
		if err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		if err := m.Mirror.WaitRevision(ctx, "chez-marcel", int64(res.Version)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(acked))
		_ = start
	}
	b.StopTimer()
	if got := m.get(b, est+"/menus/la-carte", key); got.status != 200 {
		b.Fatalf("final read: %d", got.status)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds()), "p99-µs")
}

// A change whose documents would be larger than the bucket stores is refused with a 413 and
// appends nothing: accepted, it could never be served.
func TestChangeTooLargeToServeIsRefused(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	demo, _ := os.ReadFile("demo.json")
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	// The admin calls of these tests pass ?wait=true: this node serves the change once they answer.
	before := m.get(t, "/api/v1/establishments/chez-marcel/menus/la-carte", key)
	records, err := m.Store.History(t.Context(), "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}

	// 440 items with 4,000 random characters in each language: 3.5 MB of request, and about
	// 10 MB of documents, rendered in three variants and compressed.
	text := func() string {
		b := make([]byte, 3000)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	var items []string
	for i := range 440 {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":{"fr":"Plat"},"description":{"fr":%q,"en":%q},"price":"10.00","a_la_carte":true}`, i+1, text(), text()))
	}
	body := `{"id":"big","assets":[],"sections":[{"name":{"fr":"Plats"},"items":[` + strings.Join(items, ",") + `]}]}`
	got := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/la-carte/versions/big", []byte(body))
	if got.status != http.StatusRequestEntityTooLarge || !bytes.Contains(got.body, []byte("published documents")) {
		t.Errorf("oversized menu: got %d %s, want 413 naming the published documents", got.status, got.body)
	}
	after, err := m.Store.History(t.Context(), "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(records) {
		t.Errorf("got %d records after the refusal, want %d", len(after), len(records))
	}
	// The service goes on: the same menu type takes a version that fits.
	small := `{"id":"small","assets":[],"sections":[{"name":{"fr":"Plats"},"items":[{"id":1,"name":{"fr":"Plat"},"price":"12.00","a_la_carte":true}]}]}`
	if got := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/la-carte/versions/small", []byte(small)); got.status != 200 {
		t.Fatalf("version that fits: got %d %s", got.status, got.body)
	}
	if now := m.get(t, "/api/v1/establishments/chez-marcel/menus/la-carte", key); bytes.Equal(now.body, before.body) || !bytes.Contains(now.body, []byte(`"12.00"`)) {
		t.Errorf("after a version that fits: got %s", now.body)
	}
}

// TestQuotaThroughTheBinary checks the quota flags reach the read API: the key's fourth request
// in the window is refused with the spec's body and a Retry-After.
func TestQuotaThroughTheBinary(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.KeyQuota, c.IPQuota = 3, 100 })
	demo, _ := os.ReadFile("demo.json")
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	if err := m.Mirror.WaitRevision(context.Background(), "chez-marcel", 1); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if got := m.get(t, est, key); got.status != 200 || got.header.Get("RateLimit") == "" {
			t.Fatalf("request %d: got %d RateLimit %q, want 200 with RateLimit", i, got.status, got.header.Get("RateLimit"))
		}
	}
	got := m.get(t, est, key)
	if got.status != 429 || string(got.body) != `{"error":"Rate limit exceeded"}` || got.header.Get("Retry-After") == "" {
		t.Errorf("fourth request: got %d %s Retry-After %q, want 429 with Retry-After", got.status, got.body, got.header.Get("Retry-After"))
	}
}
