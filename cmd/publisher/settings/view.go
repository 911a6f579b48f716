package settings

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// view is what a template of the page is given: the texts of its language, the state shown and
// what the form before it did.
type view struct {
	Lang       string
	table      map[string]string
	Title      string // message key of the page's title
	Message    string // for a message page: the key of its texts, "msg.<Message>.title" and ".body"
	LinkSecret string // for the page opening a login link: the link's secret, posted back
	Signed     bool   // a session is open: the page shows the sign-out form
	CSRF       string
	Once       string // names this rendering's forms: one sent again (a reload) is applied once
	Actor      app.Actor

	outcome
	Slug       domain.Slug
	Name       string
	Active     bool
	APIOn      bool
	RedirectOn bool
	Snippets   []snippet
	Hooks      *hooks // nil: webhooks are not available
	Usage      *Usage // nil: the counts are not available
	Audit      app.AuditPage
	Before     string // the audit page shown; "" for the newest
}

// outcome is what a form did, shown beside the state in its answer.
type outcome struct {
	Status      int    // 0: 200
	Notice      string // message key of what was done, in the live region
	Error       string // the refusal, as shown
	Key         string // an API key just made: this answer only
	Secret      *shownSecret
	Ping        string // the test delivery's outcome, as shown
	NeedConfirm bool   // a regeneration came without its confirmation
}

// shownSecret is a webhook's signing secret just made: this answer only.
type shownSecret struct {
	Endpoint, Secret string
	Grace            string // after a rotation, how long the previous secret still signs
}

// T returns the text of key in the view's language; an unknown key fails the template.
func (v *view) T(key string) (string, error) {
	s, ok := v.table[key]
	if !ok {
		return "", fmt.Errorf("settings: no text %q in %s", key, v.Lang)
	}
	return s, nil
}

// F returns the text of key in the view's language with args in its verbs.
func (v *view) F(key string, args ...any) (string, error) {
	s, err := v.T(key)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(s, args...), nil
}

// Path is the page's path, for the template's links and forms.
func (v *view) Path() string { return Path }

// Asset returns the path of the embedded file name, under its content's hash.
func (v *view) Asset(name string) (string, error) {
	a, ok := assetsByName[name]
	if !ok {
		return "", fmt.Errorf("settings: no asset %q", name)
	}
	return Path + "assets/" + a.hashed, nil
}

// newView returns the view of a page in the language of r.
func newView(r *http.Request, title string) *view {
	lang := languageOf(r)
	return &view{Lang: lang, table: tables[lang], Title: title}
}

// message answers status with a page of one message: msg.<key>.title and .body.
func (p *Page) message(w http.ResponseWriter, r *http.Request, status int, key string) {
	v := newView(r, "msg."+key+".title")
	v.Message = key
	p.write(w, status, "message", v)
}

// write renders the template name with v and answers it with status; a template that fails
// answers 500 and is logged.
func (p *Page) write(w http.ResponseWriter, status int, name string, v *view) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, v); err != nil {
		p.cfg.Logger.Error("settings page: render failed", "page", name, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(cmp.Or(status, http.StatusOK))
	_, _ = w.Write(b.Bytes())
}

// when formats a time as the page shows it.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// span formats a duration as the page shows it: whole hours or minutes when it is.
func span(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d > 0 && d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return d.String()
}
