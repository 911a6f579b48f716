package settings_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
)

var keyField = regexp.MustCompile(`id="api-key" readonly[^>]*>(pk_[^<]+)</textarea>`)

// shownKey returns the API key a page shows; "" when it shows none.
func shownKey(page answer) string {
	if m := keyField.FindStringSubmatch(page.body); m != nil {
		return m[1]
	}
	return ""
}

// TestKeyShownOnce: enabling the API shows its key in the answer to the form alone; regenerating
// it wants the box ticked, then the old key no longer opens the API and the new one does; no
// later page and no log line holds either key; the audit names the login link.
func TestKeyShownOnce(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	csrf := token(t, f.signIn(t, b))
	if a := f.post(b, "api/disable", csrf); a.status != http.StatusSeeOther || a.header.Get("Location") != settings.Path+"?done=api-disabled" {
		t.Fatalf("disable: got %d to %q", a.status, a.header.Get("Location"))
	}
	enabled := f.post(b, "api/enable", csrf)
	first := shownKey(enabled)
	if enabled.status != http.StatusOK || first == "" || !strings.Contains(enabled.body, `role="status"`) {
		t.Fatalf("enable: got %d, key %q", enabled.status, first)
	}
	if holds, err := f.commands.HoldsKey(t.Context(), slug, domain.APIKey(first)); err != nil || !holds {
		t.Fatalf("the key shown does not open the API: %v %v", holds, err)
	}

	refused := f.post(b, "api/regenerate", csrf)
	if refused.status != http.StatusUnprocessableEntity || shownKey(refused) != "" || !strings.Contains(refused.body, `role="alert"`) {
		t.Errorf("regenerate without the box ticked: got %d, want 422 asking to confirm, no key", refused.status)
	}
	if holds, _ := f.commands.HoldsKey(t.Context(), slug, domain.APIKey(first)); !holds {
		t.Error("an unconfirmed regeneration replaced the key")
	}
	regenerated := f.post(b, "api/regenerate", csrf, "confirm", "yes")
	second := shownKey(regenerated)
	if regenerated.status != http.StatusOK || second == "" || second == first {
		t.Fatalf("regenerate: got %d, key %q after %q", regenerated.status, second, first)
	}
	if holds, _ := f.commands.HoldsKey(t.Context(), slug, domain.APIKey(first)); holds {
		t.Error("the previous key still opens the API")
	}
	if holds, _ := f.commands.HoldsKey(t.Context(), slug, domain.APIKey(second)); !holds {
		t.Error("the new key does not open the API")
	}
	// The same form sent again, as a reload does, regenerates nothing and shows no key.
	once := regexp.MustCompile(`name="once" value="([^"]+)"`).FindStringSubmatch(regenerated.body)
	if once == nil {
		t.Fatal("no once field in the page's forms")
	}
	sent := f.post(b, "api/regenerate", csrf, "confirm", "yes", "once", once[1])
	third := shownKey(sent)
	if sent.status != http.StatusOK || third == "" || third == second {
		t.Fatalf("regenerate from the page: got %d, key %q", sent.status, third)
	}
	again := f.post(b, "api/regenerate", csrf, "confirm", "yes", "once", once[1])
	if again.status != http.StatusOK || shownKey(again) != "" || !strings.Contains(again.body, "déjà été envoyé") {
		t.Errorf("the form sent again: got %d, key %q, want it said done already", again.status, shownKey(again))
	}
	if holds, _ := f.commands.HoldsKey(t.Context(), slug, domain.APIKey(third)); !holds {
		t.Error("the form sent again replaced the key it had shown")
	}
	second = third

	later := b.do(http.MethodGet, f.web.URL+settings.Path, nil)
	for _, key := range []string{first, second} {
		if strings.Contains(later.body, key) || strings.Contains(f.logs.String(), key) {
			t.Errorf("key %s is in a later page or the logs", key)
		}
	}
	audit, err := f.commands.Audit(t.Context(), slug, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Entries) < 3 || !strings.HasPrefix(audit.Entries[0].Actor.ID, "lnk_") || audit.Entries[0].Actor.Name != "Marcel" {
		t.Errorf("audit: got %+v, want the page's commands given by the login link for Marcel", audit.Entries)
	}
	if !strings.Contains(later.body, audit.Entries[0].Actor.ID) || !strings.Contains(later.body, audit.Entries[0].Action) {
		t.Errorf("the page does not list the audit's newest entry %+v", audit.Entries[0])
	}
}

// TestRedirectSetting: the redirect's form turns it off and on, the page says so, and the
// snippets name the read API's redirects in each language.
func TestRedirectSetting(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	page := f.signIn(t, b)
	csrf := token(t, page)
	for _, want := range []string{
		`https://read.example.fr/r/master_menu?establishment=chez-marcel`,
		`https://read.example.fr/r/menus?establishment=chez-marcel&amp;amp;locale=en&amp;amp;menu_type=la-carte`,
		`https://read.example.fr/r/menus?establishment=chez-marcel&amp;amp;locale=fr&amp;amp;menu_type=la-carte`,
		`&lt;img src=`, `&lt;a href=`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page has no snippet with %s", want)
		}
	}
	if strings.Contains(page.body, "menu_type=traiteur") {
		t.Error("a menu type without web delivery has a snippet")
	}
	for _, tc := range []struct{ enabled, state string }{{"off", "désactivée"}, {"on", "activée"}} {
		a := f.post(b, "redirect", csrf, "enabled", tc.enabled)
		if a.status != http.StatusSeeOther {
			t.Fatalf("redirect %s: got %d %.300s", tc.enabled, a.status, a.body)
		}
		shown := b.do(http.MethodGet, f.web.URL+a.header.Get("Location"), nil)
		if !strings.Contains(shown.body, `<dd id="redirect-state">`+tc.state+`</dd>`) || !strings.Contains(shown.body, `class="ok"`) {
			t.Errorf("after turning the redirect %s: the page does not say so", tc.enabled)
		}
	}
	if a := f.post(b, "redirect", csrf, "enabled", "maybe"); a.status != http.StatusUnprocessableEntity || !strings.Contains(a.body, "enabled") {
		t.Errorf("redirect maybe: got %d, want 422 naming the field", a.status)
	}
}
