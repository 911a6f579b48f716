package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// importDemoAs imports the demo establishment under each slug, and returns their API keys.
func importDemoAs(t *testing.T, m *Main, slugs ...string) map[string]string {
	t.Helper()
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, slug := range slugs {
		doc := bytes.Replace(demo, []byte(`"slug": "chez-marcel"`), []byte(`"slug": "`+slug+`"`), 1)
		keys[slug] = keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slug, doc))
	}
	return keys
}

// feedPage is a page of GET /admin/v1/changes.
type feedPage struct {
	Changes []events.Change `json:"changes"`
	Next    string          `json:"next"`
}

// changes reads one page of the changes feed.
func (m *Main) changes(tb testing.TB, after string, limit int) feedPage {
	tb.Helper()
	r := do(tb, http.MethodGet, m.AdminURL+"/admin/v1/changes?limit="+strconv.Itoa(limit)+"&after="+after, nil,
		"Authorization", "Bearer "+testAdminToken)
	if r.status != http.StatusOK {
		tb.Fatalf("changes after %q: %d %s", after, r.status, r.body)
	}
	var p feedPage
	if err := json.Unmarshal(r.body, &p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// follow applies pages from after until an empty one, checking that no revision goes back, and
// returns the next cursor.
func (m *Main) follow(tb testing.TB, after string, limit int, state map[string]events.Change) string {
	tb.Helper()
	for {
		p := m.changes(tb, after, limit)
		for _, c := range p.Changes {
			if had, ok := state[c.Establishment]; ok && c.Revision < had.Revision {
				tb.Errorf("%s went back from %d to %d", c.Establishment, had.Revision, c.Revision)
			}
			state[c.Establishment] = c
		}
		if after = p.Next; len(p.Changes) == 0 {
			return after
		}
	}
}

// The feed, through serve: a first sync then the changes, ending in the state the read API serves,
// an establishment whose API is disabled arriving as not served; its cursor goes on after a
// restart.
func TestChangesFeedThroughServe(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	slugs := []string{"chez-marcel", "chez-marcel-2", "chez-marcel-3"}
	keys := importDemoAs(t, m, slugs...)
	state := map[string]events.Change{}
	cursor := m.follow(t, "", 2, state)
	synced := cursor
	served := func() {
		t.Helper()
		for _, slug := range slugs {
			got, ok := state[slug]
			if !got.Served {
				continue
			}
			r := m.get(t, "/api/v1/establishments/"+slug, keys[slug])
			if !ok || r.status != http.StatusOK || r.revision(t) != got.Revision {
				t.Errorf("%s: the feed says %+v, the read API %d at %d", slug, got, r.status, r.revision(t))
			}
		}
	}
	if len(state) != 3 {
		t.Fatalf("first sync: %v, want 3 establishments", state)
	}
	served()

	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel-2/api/disable", nil); r.status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	eventually(t, "the disabled API in the feed", func() bool {
		cursor = m.follow(t, cursor, 1000, state)
		return !state["chez-marcel-2"].Served
	})
	if got := m.get(t, "/api/v1/establishments/chez-marcel-2", keys["chez-marcel-2"]); got.status != http.StatusNotFound {
		t.Errorf("the read API serves an establishment the feed says is not: %d", got.status)
	}
	served()

	m.Close()
	m = openMain(t, dir, "2026-11-22")
	before := state["chez-marcel"].Revision
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel-3/api/disable", nil); r.status != http.StatusOK {
		t.Fatalf("disable after restart: %d %s", r.status, r.body)
	}
	eventually(t, "a change after the restart, from the cursor of before", func() bool {
		cursor = m.follow(t, cursor, 1000, state)
		return !state["chez-marcel-3"].Served
	})
	if state["chez-marcel"].Revision != before {
		t.Errorf("an unchanged establishment moved: %+v", state["chez-marcel"])
	}
	served()

	// Signals no longer kept: the cursor of the first sync is gone, the newest one goes on.
	js := m.jetStream(t)
	stream, err := js.Stream(t.Context(), events.SignalStreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := do(t, http.MethodGet, m.AdminURL+"/admin/v1/changes?after="+synced, nil, "Authorization", "Bearer "+testAdminToken)
	if r.status != http.StatusGone || !strings.Contains(string(r.body), "--change-retention") || !strings.Contains(string(r.body), "start over without after") {
		t.Errorf("a cursor older than the signals kept: %d %s, want 410 naming the retention and how to start over", r.status, r.body)
	}
	if p := m.changes(t, cursor, 1000); len(p.Changes) != 0 {
		t.Errorf("the newest cursor after the purge: %+v, want no change", p.Changes)
	}
}

// publisher changes prints the feed, then follows it until interrupted, exiting 0.
func TestChangesCommand(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	flags := []string{"--admin-url", m.AdminURL, "--admin-token", testAdminToken}
	var out, errs bytes.Buffer
	if code := cli(t.Context(), append([]string{"changes"}, flags...), &out, &errs, noEnv); code != exitOK {
		t.Fatalf("changes: exit %d: %s", code, errs.String())
	}
	line := regexp.MustCompile(`^chez-marcel [1-9][0-9]* served establishment,hours,menus,menus/la-carte,menus/menu-du-jour,menus/vins,jsonld\n$`)
	if !line.MatchString(out.String()) {
		t.Errorf("changes printed %q, want one line matching %s", out.String(), line)
	}
	cursor := strings.TrimPrefix(strings.Split(strings.TrimSpace(errs.String()), "\n")[1], "cursor: ")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var followed, followErrs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, append([]string{"changes", "--follow", "--json", "--after", cursor}, flags...), &followed, &followErrs, noEnv)
	}()
	m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/disable", nil)
	eventually(t, "the change followed", func() bool { return strings.Contains(followed.String(), `"served":false`) })
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("changes --follow interrupted: exit %d: %s", code, followErrs.String())
	}
	if code := cli(t.Context(), append([]string{"changes", "--limit", "0"}, flags...), &out, &errs, noEnv); code != exitUsage {
		t.Errorf("changes --limit 0: exit %d, want %d", code, exitUsage)
	}
}

// A platform endpoint, through serve: registered once, it receives every establishment's
// changes in signed batches, an API disabled as not served, and ends holding what the read API
// serves.
func TestPlatformWebhookThroughServe(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var headers []http.Header
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, headers = append(bodies, body), append(headers, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})
	flags := []string{"--admin-url", m.AdminURL, "--admin-token", testAdminToken}
	var out, errs bytes.Buffer
	if code := cli(t.Context(), append([]string{"admin", "add-platform-webhook", receiver.URL + "/all"}, flags...), &out, &errs, noEnv); code != exitOK {
		t.Fatalf("admin add-platform-webhook: exit %d: %s", code, errs.String())
	}
	var reg struct {
		Endpoint struct{ ID string }
		Secret   string
	}
	if err := json.Unmarshal(out.Bytes(), &reg); err != nil || reg.Secret == "" {
		t.Fatalf("admin add-platform-webhook printed %s: %v", out.String(), err)
	}
	secret := reg.Secret
	out.Reset()
	if code := cli(t.Context(), append([]string{"admin", "platform-webhooks"}, flags...), &out, &errs, noEnv); code != exitOK || !strings.Contains(out.String(), reg.Endpoint.ID) {
		t.Errorf("admin platform-webhooks: exit %d, printed %s", code, out.String())
	}
	slugs := []string{"chez-marcel", "chez-marcel-2", "chez-marcel-3"}
	keys := importDemoAs(t, m, slugs...)
	m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel-3/api/disable", nil)
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]events.Change{}
	eventually(t, "every establishment delivered, chez-marcel-3 as not served", func() bool {
		mu.Lock()
		defer mu.Unlock()
		clear(state)
		for i, body := range bodies {
			if err := verifier.Verify(body, headers[i]); err != nil {
				t.Fatalf("signature: %v", err)
			}
			var p webhook.PlatformPayload
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Data.Changes {
				if c.Revision < state[c.Establishment].Revision {
					t.Errorf("%s went back", c.Establishment)
				}
				state[c.Establishment] = c
			}
		}
		return len(state) == 3 && !state["chez-marcel-3"].Served
	})
	for _, slug := range slugs[:2] {
		r := m.get(t, "/api/v1/establishments/"+slug, keys[slug])
		if !state[slug].Served || r.revision(t) != state[slug].Revision {
			t.Errorf("%s: delivered %+v, served at %d", slug, state[slug], r.revision(t))
		}
	}
}
