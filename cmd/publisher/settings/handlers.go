package settings

import (
	"errors"
	"net/http"
	"slices"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// open answers a login link with a page whose button opens it. A link is used by that page's POST
// (enter), never by a GET: link previews and scanners send GETs, and another site could send one
// to sign a visitor in to a session it chose. A link used or expired is answered 410.
func (p *Page) open(w http.ResponseWriter, r *http.Request) {
	secret := r.PathValue("secret")
	l, err := p.peekLink(r.Context(), secret)
	if errors.Is(err, errLinkGone) {
		p.message(w, r, http.StatusGone, "linkgone")
		return
	}
	if err != nil {
		p.fault(w, r, "read login link", err)
		return
	}
	v := newView(r, "open.title")
	v.Slug, v.Actor, v.LinkSecret = l.Slug, l.actor(), secret
	p.write(w, http.StatusOK, "open", v)
}

// enter opens the login link the form of open carries: a session starts, any session the browser
// had ends, and the browser goes to the page. A form from another origin is refused (403); a link
// used or expired is answered 410.
func (p *Page) enter(w http.ResponseWriter, r *http.Request) {
	if err := p.origin.Check(r); err != nil {
		p.message(w, r, http.StatusForbidden, "origin")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		p.message(w, r, http.StatusBadRequest, "badform")
		return
	}
	l, err := p.consumeLink(r.Context(), r.PostForm.Get("secret"))
	if errors.Is(err, errLinkGone) {
		p.message(w, r, http.StatusGone, "linkgone")
		return
	}
	if _, key, serr := p.sessionOf(r); err == nil && serr == nil {
		err = p.endSession(r.Context(), w, r, key)
	}
	if err == nil {
		err = p.startSession(r.Context(), w, r, l)
	}
	if err != nil {
		p.fault(w, r, "open login link", err)
		return
	}
	p.cfg.Logger.Info("settings session opened", "link", l.ID, "establishment", l.Slug)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// show answers the page, with the notice the form before it left in ?done.
func (p *Page) show(w http.ResponseWriter, r *http.Request) {
	s, _, err := p.sessionOf(r)
	if err != nil {
		p.noSession(w, r, err)
		return
	}
	var o outcome
	if done := r.URL.Query().Get("done"); slices.Contains(notices, done) {
		o.Notice = "done." + done
	}
	p.render(w, r, s, o)
}

// notices are the values of ?done: what a form that redirects to the page did.
var notices = []string{"api-disabled", "redirect-on", "redirect-off", "webhook-enabled", "webhook-removed"}

// done sends the browser back to the page, which says what the form did.
func done(w http.ResponseWriter, r *http.Request, notice string) {
	http.Redirect(w, r, Path+"?done="+notice, http.StatusSeeOther)
}

// setLanguage keeps the language asked for in a cookie and goes back to the page.
func (p *Page) setLanguage(w http.ResponseWriter, r *http.Request) {
	lang := r.PathValue("lang")
	if _, ok := tables[lang]; !ok {
		p.message(w, r, http.StatusNotFound, "notfound")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: langCookie, Value: lang, Path: Path, MaxAge: 365 * 24 * 3600,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: p.secure(r),
	})
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// action is a form's work, given the session and its key, with the session's actor in r's
// context.
type action func(w http.ResponseWriter, r *http.Request, s session, key string)

// form returns a handler that checks a form before a does its work: posted from the page's own
// origin (403), by an open session (401), with the session's token (403).
func (p *Page) form(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := p.origin.Check(r); err != nil {
			p.message(w, r, http.StatusForbidden, "origin")
			return
		}
		s, key, err := p.sessionOf(r)
		if err != nil {
			p.noSession(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			p.message(w, r, http.StatusBadRequest, "badform")
			return
		}
		if !s.validToken(r.PostForm.Get("csrf")) {
			p.message(w, r, http.StatusForbidden, "token")
			return
		}
		a(w, r.WithContext(app.WithActor(r.Context(), s.Actor)), s, key)
	}
}

// logout ends the session.
func (p *Page) logout(w http.ResponseWriter, r *http.Request, s session, key string) {
	if err := p.endSession(r.Context(), w, r, key); err != nil {
		p.fault(w, r, "sign out", err)
		return
	}
	p.cfg.Logger.Info("settings session closed", "link", s.Actor.ID, "establishment", s.Slug)
	p.message(w, r, http.StatusOK, "loggedout")
}

// noSession answers a request without an open session: 401, saying to ask for a new link.
func (p *Page) noSession(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNoSession) {
		p.message(w, r, http.StatusUnauthorized, "expired")
		return
	}
	p.fault(w, r, "read session", err)
}

// fault answers a failure that is not the visitor's: 503 when a store did not answer, else 500;
// it is logged, its error holding no secret.
func (p *Page) fault(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, key := http.StatusInternalServerError, "internal"
	if app.KindOf(err) == app.KindUnavailable {
		status, key = http.StatusServiceUnavailable, "unavailable"
	}
	p.cfg.Logger.Warn("settings page: "+what+" failed", "status", status, "err", err)
	p.message(w, r, status, key)
}
