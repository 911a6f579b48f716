package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
	apiusage "github.com/opencarte/publisher/readapi/usage"
)

// TestAPIUsageThroughTheBinary: the use of an establishment's key, 200s, a 304 and a 429 on the
// read API, reaches the admin role's APIUsage against the key's quota, and the settings page; a
// regenerated key starts from nothing, as its quota does; an unknown establishment is not found.
func TestAPIUsageThroughTheBinary(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.KeyQuota, c.IPQuota = 3, 100 })
	key := importDemo(t, m)
	if err := m.Mirror.WaitRevision(context.Background(), "chez-marcel", 1); err != nil {
		t.Fatal(err)
	}
	var etag string
	for i := 1; i <= 3; i++ {
		got := m.get(t, est, key)
		if got.status != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i, got.status)
		}
		etag = got.header.Get("Etag")
	}
	if got := m.read(t, http.MethodGet, est, "X-Api-Key", key, "If-None-Match", etag); got.status != http.StatusNotModified {
		t.Fatalf("revalidation: got %d, want 304", got.status)
	}
	if got := m.get(t, est, key); got.status != http.StatusTooManyRequests {
		t.Fatalf("fourth request: got %d, want 429", got.status)
	}
	want := apiusage.Usage{Requests: 3, NotModified: 1, Limited: 1, Quota: 3, Window: time.Hour}
	var got apiusage.Usage
	eventually(t, "the use reported", func() bool {
		var err error
		if got, err = m.APIUsage(t.Context(), "chez-marcel"); err != nil {
			t.Fatal(err)
		}
		return got == want
	})

	if page := settingsPage(t, m); !strings.Contains(page, `id="usage-requests">3 of a quota of 3<`) {
		t.Errorf("the settings page does not show the 3 requests of 3:\n%s", page)
	}

	keyOf(t, m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/regenerate-key", nil))
	if got, err := m.APIUsage(t.Context(), "chez-marcel"); err != nil || got != (apiusage.Usage{Quota: 3, Window: time.Hour}) {
		t.Errorf("after a regeneration: got %+v, %v, want no use", got, err)
	}
	if _, err := m.APIUsage(t.Context(), "nowhere"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown establishment: got %v, want ErrNotFound", err)
	}
}

// settingsPage opens chez-marcel's settings page in English through a login link, and returns it.
func settingsPage(t *testing.T, m *Main) string {
	t.Helper()
	r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/login-links", nil)
	link, _ := r.json(t)["url"].(string)
	if r.status != http.StatusCreated || link == "" {
		t.Fatalf("login link: got %d %s", r.status, r.body)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The link's page posts its secret back: that opens it.
	form := url.Values{"secret": {link[strings.LastIndex(link, "/")+1:]}}
	req, err := http.NewRequest(http.MethodPost, m.AdminURL+settings.Path+"open", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", "en")
	resp, err := (&http.Client{Jar: jar}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("settings page: got %d, %v", resp.StatusCode, err)
	}
	return string(body)
}
