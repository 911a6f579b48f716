package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The README's two ways of following every establishment, standard library only, run here
// against the service.

// change is one establishment's entry, in the feed and in a platform delivery.
type change struct {
	Establishment string   `json:"establishment"`
	Revision      int64    `json:"content_revision"`
	Resources     []string `json:"resources"`
	Served        bool     `json:"served"`
}

// followChanges reads the changes feed from cursor ("" for a full sync first) and passes each
// change to apply, saving the cursor after each page, until ctx ends. A 410 means the cursor is
// too old: start over with a full sync.
func followChanges(ctx context.Context, adminURL, token, cursor string, apply func(change), save func(cursor string)) error {
	for ctx.Err() == nil {
		q := url.Values{"after": {cursor}, "limit": {"1000"}, "wait": {"60s"}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/admin/v1/changes?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(time.Second) // the service restarting: try again
			continue
		}
		var page struct {
			Changes []change `json:"changes"`
			Next    string   `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusGone:
			cursor = "" // too old: a full sync again
			continue
		case resp.StatusCode != http.StatusOK || err != nil:
			return fmt.Errorf("changes feed: %s: %v", resp.Status, err)
		}
		for _, c := range page.Changes {
			apply(c) // re-read c.Resources when c.Served, drop the establishment otherwise
		}
		cursor = page.Next
		save(cursor)
	}
	return ctx.Err()
}

// platformReceiver answers a platform endpoint's deliveries: it checks the Standard Webhooks
// signature with the endpoint's secret, then passes each change to apply.
func platformReceiver(secret string, apply func(change)) http.Handler {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil || verifySignature(key, r.Header, body, time.Now()) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p struct {
			Type string `json:"type"`
			Data struct {
				Changes []change `json:"changes"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		for _, c := range p.Data.Changes { // none in a webhook.ping
			apply(c)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// verifySignature checks the webhook-signature header: HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>",
// any of its space-separated v1 entries, within five minutes of now.
func verifySignature(key []byte, h http.Header, body []byte, now time.Time) error {
	var sec int64
	if _, err := fmt.Sscan(h.Get("webhook-timestamp"), &sec); err != nil {
		return errors.New("no timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", h.Get("webhook-id"), sec)
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		got, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sig, "v1,"))
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

// The feed follower and the platform receiver of the README hold every establishment after a
// full sync and a change.
func TestFollowingExamples(t *testing.T) {
	var receiver atomic.Pointer[http.Handler]
	received := make(chan change, 16)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := receiver.Load(); h != nil {
			(*h).ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})
	reg := do(t, http.MethodPost, m.AdminURL+"/admin/v1/webhooks", []byte(`{"url": "`+srv.URL+`/hooks"}`),
		"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json")
	h := platformReceiver(reg.json(t)["secret"].(string), func(c change) { received <- c })
	receiver.Store(&h)

	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	held := make(chan change, 16)
	go func() {
		_ = followChanges(ctx, m.AdminURL, testAdminToken, "", func(c change) { held <- c }, func(string) {})
	}()
	for _, ch := range []chan change{held, received} {
		if c := <-ch; c.Establishment != "chez-marcel" || !c.Served {
			t.Errorf("first change: %+v", c)
		}
	}
	m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/disable", nil)
	for _, ch := range []chan change{held, received} {
		if c := <-ch; c.Establishment != "chez-marcel" || c.Served {
			t.Errorf("after the API was disabled: %+v", c)
		}
	}
	// The receiver refuses a body whose signature does not verify.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("unsigned delivery: %d, want 401", w.Code)
	}
}
