package settings

import (
	"cmp"
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// Bounds of what the page shows.
const (
	shownEndpoints  = 20 // webhook endpoints, each with its last deliveries
	shownDeliveries = 5
	auditPage       = 20
)

// render answers the settings page of s's establishment with what the form before it did.
func (p *Page) render(w http.ResponseWriter, r *http.Request, s session, o outcome) {
	v, err := p.settingsView(r, s, o)
	if err != nil {
		if app.KindOf(err) == app.KindNotFound {
			p.message(w, r, http.StatusNotFound, "notfound")
			return
		}
		p.fault(w, r, "show settings", err)
		return
	}
	p.write(w, o.Status, "settings", v)
}

// settingsView reads the state of s's establishment, its webhooks, its use and its audit.
func (p *Page) settingsView(r *http.Request, s session, o outcome) (*view, error) {
	ctx := r.Context()
	st, err := p.cfg.Commands.Get(ctx, s.Slug)
	if err != nil {
		return nil, err
	}
	v := newView(r, "title")
	v.Signed, v.CSRF, v.Actor, v.outcome = true, s.CSRF, s.Actor, o
	v.Once = app.NewID("once")
	e := st.Establishment
	v.Slug, v.Name, v.Active = s.Slug, cmp.Or(e.Name, e.Slug), e.Status == "active"
	if e.Settings != nil {
		v.APIOn = e.Settings.PublicAPIEnabled != nil && *e.Settings.PublicAPIEnabled
		v.RedirectOn = e.Settings.MenuRedirectEnabled != nil && *e.Settings.MenuRedirectEnabled
	}
	v.Snippets = snippets(p.cfg.PublicURL, e)
	if v.Hooks, err = p.hooks(ctx, s.Slug); err != nil {
		return nil, err
	}
	if p.cfg.Usage != nil {
		if u, err := p.cfg.Usage(ctx, s.Slug); err == nil {
			v.Usage = &u
		} else {
			p.cfg.Logger.Warn("settings page: usage not read", "establishment", s.Slug, "err", err)
		}
	}
	if r.Method == http.MethodGet {
		v.Before = r.URL.Query().Get("before")
	}
	v.Audit, err = p.cfg.Commands.Audit(ctx, s.Slug, v.Before, auditPage)
	if app.KindOf(err) == app.KindMalformed {
		v.Before = ""
		v.Audit, err = p.cfg.Commands.Audit(ctx, s.Slug, "", auditPage)
	}
	return v, err
}

// snippet is HTML to paste into a website, for one redirect.
type snippet struct {
	ID     string
	Menu   string // the menu type's name; "" for the full menu
	Locale string // the menu's language; "" for the full menu
	Code   string
}

// snippets returns the snippets of the redirects of e on the read API at base: the full menu, then
// each menu type delivered on the web, each in each language.
func snippets(base string, e domain.EstablishmentInput) []snippet {
	base = strings.TrimRight(base, "/")
	q := url.Values{"establishment": {e.Slug}}
	var out []snippet
	for _, locale := range []string{"fr", "en"} {
		out = append(out, snippet{ID: "snippet-master-" + locale, Locale: locale, Code: snippetCode(base+"/r/master_menu?"+q.Encode(), e.Name, locale)})
	}
	for _, mt := range e.MenuTypes {
		if mt.WebDelivery == nil || !*mt.WebDelivery {
			continue
		}
		for _, locale := range []string{"fr", "en"} {
			q := url.Values{"establishment": {e.Slug}, "menu_type": {mt.Slug}, "locale": {locale}}
			out = append(out, snippet{
				ID: "snippet-" + mt.Slug + "-" + locale, Menu: cmp.Or(mt.Name, mt.Slug), Locale: locale,
				Code: snippetCode(base+"/r/menus?"+q.Encode(), e.Name+" – "+mt.Name, locale),
			})
		}
	}
	return out
}

// snippetCode is an <img> and a link to u, their texts in locale.
func snippetCode(u, name, locale string) string {
	alt := html.EscapeString(name)
	return `<img src="` + html.EscapeString(u) + `" alt="` + alt + `">` + "\n" +
		`<a href="` + html.EscapeString(u) + `">` + html.EscapeString(tables[locale]["snippet.linktext"]) + `</a>`
}

// hooks is the webhook section: the endpoints shown, each with its last deliveries.
type hooks struct {
	Endpoints []endpoint
	More      int // endpoints not shown
}

type endpoint struct {
	app.EndpointState
	Deliveries []app.Delivery
}

// LastCode is the HTTP status of a delivery's last attempt; 0 when none answered.
func (e endpoint) LastCode(d app.Delivery) int {
	if len(d.Attempts) == 0 {
		return 0
	}
	return d.Attempts[len(d.Attempts)-1].StatusCode
}

// hooks returns the webhook section of slug; nil without deliveries.
func (p *Page) hooks(ctx context.Context, slug domain.Slug) (*hooks, error) {
	if p.cfg.Deliveries == nil {
		return nil, nil
	}
	eps, err := p.cfg.Deliveries.Endpoints(ctx, slug)
	if err != nil {
		return nil, err
	}
	h := &hooks{More: max(len(eps)-shownEndpoints, 0)}
	for _, ep := range eps[:min(len(eps), shownEndpoints)] {
		log, err := p.cfg.Deliveries.Log(ctx, slug, ep.ID, shownDeliveries)
		if app.KindOf(err) == app.KindNotFound {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		h.Endpoints = append(h.Endpoints, endpoint{EndpointState: ep, Deliveries: log})
	}
	return h, nil
}
