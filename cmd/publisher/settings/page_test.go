package settings_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
)

// TestUsage: the page shows the API's use the counts give, against the key's quota, and says
// when they are not available.
func TestUsage(t *testing.T) {
	f := newFixture(t)
	var fail bool
	page := f.newPage(t, func(c *settings.Config) {
		c.Usage = func(_ context.Context, s domain.Slug) (settings.Usage, error) {
			if fail || s != slug {
				return settings.Usage{}, errors.New("no counts")
			}
			return settings.Usage{Requests: 42, NotModified: 7, Limited: 3, Quota: 120, Window: time.Hour}, nil
		}
	})
	web := httptest.NewServer(page.Mount(http.NotFoundHandler()))
	t.Cleanup(web.Close)
	b := newBrowser(t)
	f.signIn(t, b) // the session is in the bucket both pages share
	b.header.Set("Accept-Language", "en")
	got := b.do(http.MethodGet, web.URL+settings.Path, nil).body
	for _, want := range []string{"Over the last 1 h:", `<dd id="usage-requests">42 of a quota of 120</dd>`, "<dd>7</dd>", "<dd>3</dd>"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	fail = true
	if got := b.do(http.MethodGet, web.URL+settings.Path, nil).body; !strings.Contains(got, "The usage counts are not available.") {
		t.Error("the page does not say the counts are not available")
	}
}

// TestAuditPages: the audit lists the newest entries first, with a link to the older ones.
func TestAuditPages(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	f.signIn(t, b)
	ctx := app.WithActor(t.Context(), app.Actor{ID: "tok_1", Name: "back office"})
	for i := range 25 {
		if _, err := f.commands.SetMenuRedirect(ctx, app.Request{Slug: slug}, i%2 == 1); err != nil {
			t.Fatal(err)
		}
	}
	rows := regexp.MustCompile(`<tr class="audit">`)
	newest := b.do(http.MethodGet, f.web.URL+settings.Path, nil)
	older := regexp.MustCompile(`href="` + regexp.QuoteMeta(settings.Path) + `\?before=([0-9]+)"`).FindStringSubmatch(newest.body)
	if n := len(rows.FindAllString(newest.body, -1)); n != 20 || older == nil || !strings.Contains(newest.body, "back office") {
		t.Fatalf("newest audit page: %d rows, older link %v", n, older)
	}
	next := b.do(http.MethodGet, f.web.URL+settings.Path+"?before="+older[1], nil)
	if n := len(rows.FindAllString(next.body, -1)); n != 5 || strings.Contains(next.body, "?before=") {
		t.Errorf("older audit page: %d rows, want the oldest 5 changes and no older page", n)
	}
	if bad := b.do(http.MethodGet, f.web.URL+settings.Path+"?before=x", nil); bad.status != http.StatusOK || len(rows.FindAllString(bad.body, -1)) != 20 {
		t.Errorf("a cursor the audit did not give: got %d, want the newest page", bad.status)
	}
}
