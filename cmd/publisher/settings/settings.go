package settings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// Path is where the page is served on the admin listener; everything of it is under this path.
const Path = "/admin/settings/"

// maxFormBytes bounds the body of a form of the page.
const maxFormBytes = 16 << 10

// Usage is an establishment's use of the read API with its key, in the last Window: the
// requests counted against the key's quota of Quota requests (0: no key quota), and the 304s
// and 429s answered with the key.
type Usage struct {
	Requests, NotModified, Limited int64
	Quota                          int
	Window                         time.Duration
}

// Config wires a Page.
type Config struct {
	JS       jetstream.JetStream
	Replicas int
	Commands *app.Commands
	// Deliveries is optional: without it the page has no webhook section.
	Deliveries *app.Deliveries
	// Usage is optional: without it the page says the counts are not available.
	Usage func(ctx context.Context, slug domain.Slug) (Usage, error)
	// PublicURL is the read API's base URL as clients reach it, in the redirect snippets.
	PublicURL string
	// BaseURL returns the admin listener's base URL as browsers reach it, read when a link is
	// made: login links start with it, and the session cookie is Secure when it is https.
	BaseURL func() string
	// LinkLifetime is how long a login link may be opened; 0 is DefaultLinkLifetime.
	LinkLifetime time.Duration
	// SessionLifetime is how long a session lasts from the opening of its link; 0 is
	// DefaultSessionLifetime.
	SessionLifetime time.Duration
	Logger          *slog.Logger
	Now             func() time.Time // nil is time.Now
}

// Page serves the API settings page and makes its login links. It is safe for concurrent use.
type Page struct {
	cfg      Config
	links    jetstream.KeyValue
	sessions jetstream.KeyValue
	origin   *http.CrossOriginProtection
	mux      *http.ServeMux
	now      func() time.Time
}

// New checks cfg, opens the buckets of links and sessions, and returns the page.
func New(ctx context.Context, cfg Config) (*Page, error) {
	cfg.LinkLifetime = cmp.Or(cfg.LinkLifetime, DefaultLinkLifetime)
	cfg.SessionLifetime = cmp.Or(cfg.SessionLifetime, DefaultSessionLifetime)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Page{cfg: cfg, origin: http.NewCrossOriginProtection(), now: cfg.Now}
	if p.now == nil {
		p.now = time.Now
	}
	var err error
	p.links, err = openBucket(ctx, cfg.JS, LinksBucket, "Login links to the API settings page not yet opened, by their secrets' hashes.", cfg.Replicas, cfg.LinkLifetime)
	if err != nil {
		return nil, err
	}
	p.sessions, err = openBucket(ctx, cfg.JS, SessionsBucket, "Sessions of the API settings page, by their secrets' hashes.", cfg.Replicas, cfg.SessionLifetime)
	if err != nil {
		return nil, err
	}
	p.routes()
	return p, nil
}

func (c Config) validate() error {
	var errs []error
	if c.JS == nil || c.Commands == nil || c.Logger == nil || c.BaseURL == nil {
		errs = append(errs, errors.New("settings: jetstream, commands, logger and base URL are required"))
	}
	if c.LinkLifetime < MinLinkLifetime || c.LinkLifetime > MaxLinkLifetime {
		errs = append(errs, fmt.Errorf("settings: link lifetime %s: want %s to %s", c.LinkLifetime, MinLinkLifetime, MaxLinkLifetime))
	}
	if c.SessionLifetime < MinSessionLifetime || c.SessionLifetime > MaxSessionLifetime {
		errs = append(errs, fmt.Errorf("settings: session lifetime %s: want %s to %s", c.SessionLifetime, MinSessionLifetime, MaxSessionLifetime))
	}
	if domain.ValidateURL(c.PublicURL) != nil {
		errs = append(errs, fmt.Errorf("settings: public URL %q: want the absolute base URL of the read API", c.PublicURL))
	}
	return errors.Join(errs...)
}

// Mount returns a handler that serves the page under Path, and everything else with next.
func (p *Page) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Path, "/") || strings.HasPrefix(r.URL.Path, Path) {
			p.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP answers a request under Path, with the page's headers on every answer.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	p.mux.ServeHTTP(w, r)
}

// contentSecurityPolicy lets the page load its own styles and script alone, post its forms to
// itself alone, and be framed by nobody.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (p *Page) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+Path+"{$}", p.show)
	m.HandleFunc("GET "+Path+"open/{secret}", p.open)
	m.HandleFunc("POST "+Path+"open", p.enter)
	m.HandleFunc("GET "+Path+"lang/{lang}", p.setLanguage)
	m.HandleFunc("GET "+Path+"assets/{name}", p.asset)
	m.HandleFunc("POST "+Path+"logout", p.form(p.logout))
	m.HandleFunc("POST "+Path+"api/enable", p.form(p.enableAPI))
	m.HandleFunc("POST "+Path+"api/disable", p.form(p.disableAPI))
	m.HandleFunc("POST "+Path+"api/regenerate", p.form(p.regenerateKey))
	m.HandleFunc("POST "+Path+"redirect", p.form(p.setRedirect))
	m.HandleFunc("POST "+Path+"webhooks", p.form(p.addWebhook))
	m.HandleFunc("POST "+Path+"webhooks/{id}/{action}", p.form(p.webhookAction))
	m.HandleFunc(strings.TrimSuffix(Path, "/"), func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Path, http.StatusSeeOther)
	})
	m.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		p.message(w, r, http.StatusNotFound, "notfound")
	})
	p.mux = m
}
