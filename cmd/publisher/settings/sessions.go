package settings

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// SessionsBucket holds the sessions of the page, by the hash of their cookies' secrets.
const SessionsBucket = "SETTINGS_SESSIONS"

// Bounds of the sessions.
const (
	DefaultSessionLifetime = time.Hour
	MinSessionLifetime     = 5 * time.Minute
	MaxSessionLifetime     = 24 * time.Hour
	// MaxSessions is how many sessions opened within a SessionLifetime the bucket holds: opening
	// more is refused (503) until older ones end.
	MaxSessions = 100_000
)

// The session cookie's names: with the __Host- prefix when Secure, which browsers accept only
// for a cookie of path / without a domain; without it, for the page's path alone.
const (
	secureCookie = "__Host-settings-session"
	plainCookie  = "settings-session"
)

// errNoSession is a request without a session, or with one that ended.
var errNoSession = errors.New("settings: no session")

// session is a signed-in administrator as the bucket holds it: never its secret.
type session struct {
	Slug    domain.Slug `json:"slug"`
	Actor   app.Actor   `json:"actor"`
	CSRF    string      `json:"csrf"`
	Expires time.Time   `json:"expires"`
}

// startSession opens a session for the link l and sets its cookie on w.
func (p *Page) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, l link) error {
	secret := app.NewSecret()
	key, _ := keyOf(secret)
	s := session{
		Slug: l.Slug, Actor: l.actor(), CSRF: app.NewSecret(),
		Expires: p.now().Add(p.cfg.SessionLifetime).UTC().Truncate(time.Second),
	}
	if err := putRecord(ctx, p.sessions, MaxSessions, key, s); err != nil {
		return err
	}
	http.SetCookie(w, p.cookie(r, secret, int(p.cfg.SessionLifetime/time.Second)))
	return nil
}

// sessionOf returns the session of r's cookie, with its key in the bucket; errNoSession when it
// has none that is still open.
func (p *Page) sessionOf(r *http.Request) (session, string, error) {
	c, err := r.Cookie(p.cookieName(r))
	if err != nil {
		return session{}, "", errNoSession
	}
	key, ok := keyOf(c.Value)
	if !ok {
		return session{}, "", errNoSession
	}
	var s session
	_, found, err := getRecord(r.Context(), p.sessions, key, &s)
	switch {
	case err != nil:
		return session{}, "", err
	case !found || !p.now().Before(s.Expires):
		return session{}, "", errNoSession
	}
	return s, key, nil
}

// endSession deletes the session at key and clears its cookie.
func (p *Page) endSession(ctx context.Context, w http.ResponseWriter, r *http.Request, key string) error {
	if err := p.sessions.Delete(ctx, key); err != nil {
		return fmt.Errorf("%w: settings: end session: %w", app.ErrUnavailable, err)
	}
	http.SetCookie(w, p.cookie(r, "", -1))
	return nil
}

// secure says whether the session cookie of r is Secure: r came over TLS, or the page's
// configured address is https (TLS ends at a proxy before it).
func (p *Page) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(p.cfg.BaseURL(), "https://")
}

func (p *Page) cookieName(r *http.Request) string {
	if p.secure(r) {
		return secureCookie
	}
	return plainCookie
}

// cookie returns the session cookie holding secret for maxAge seconds (negative: deleted). The
// age, not a date, lets the browser's clock disagree with the service's.
func (p *Page) cookie(r *http.Request, secret string, maxAge int) *http.Cookie {
	c := &http.Cookie{
		Name: plainCookie, Value: secret, Path: Path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	}
	if p.secure(r) {
		c.Name, c.Path, c.Secure = secureCookie, "/", true
	}
	return c
}

// validToken says whether token is the session's form token, compared in constant time.
func (s session) validToken(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}
