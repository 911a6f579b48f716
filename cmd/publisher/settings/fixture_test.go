package settings_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

const slug = "chez-marcel"

// platform is the actor the test's links are made by.
var platform = app.Actor{ID: "admin", Name: "admin token"}

// clock is a fake clock the pages read.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// logs keeps what the pages log, to check no secret is in it.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logs) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// fixture is a settings page on a real NATS server, with the commands of a real event log holding
// the demo establishment, served by an httptest server.
type fixture struct {
	srv      *server.Server
	commands *app.Commands
	clock    *clock
	logs     *logs
	page     *settings.Page
	web      *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{srv: natstest.Start(t), clock: &clock{}, logs: &logs{}}
	f.clock.ns.Store(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixNano())
	nc := natstest.Connect(t, f.srv)
	store, err := events.Open(t.Context(), nc, events.Config{})
	if err != nil {
		t.Fatal(err)
	}
	trail, err := events.OpenAudit(t.Context(), nc, events.AuditConfig{MemoryStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	f.commands, err = app.New(app.Config{
		Log: store, Audit: trail, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Now: f.clock.now,
		Clock: func(*time.Location) domain.LocalDate { return domain.LocalDate{Year: 2026, Month: 11, Day: 22} },
	})
	if err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("../demo.json")
	if err != nil {
		t.Fatal(err)
	}
	var snap domain.EstablishmentInput
	if err := json.Unmarshal(demo, &snap); err != nil {
		t.Fatal(err)
	}
	if _, err := f.commands.Import(t.Context(), app.Request{Slug: slug}, snap); err != nil {
		t.Fatal(err)
	}
	f.web = httptest.NewUnstartedServer(nil)
	f.page = f.newPage(t)
	f.web.Config.Handler = f.page.Mount(http.NotFoundHandler())
	f.web.Start()
	t.Cleanup(f.web.Close)
	return f
}

// newPage returns another page on its own connection to the fixture's server, as another admin
// process would have.
func (f *fixture) newPage(t *testing.T, options ...func(*settings.Config)) *settings.Page {
	t.Helper()
	js, err := jetstream.New(natstest.Connect(t, f.srv))
	if err != nil {
		t.Fatal(err)
	}
	cfg := settings.Config{
		JS: js, Commands: f.commands, PublicURL: "https://read.example.fr",
		BaseURL: func() string { return f.web.URL }, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Now: f.clock.now,
	}
	for _, o := range options {
		o(&cfg)
	}
	p, err := settings.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// link makes a login link to the demo establishment, as the platform would.
func (f *fixture) link(t *testing.T, name string) string {
	t.Helper()
	u, expires, err := f.page.CreateLink(app.WithActor(t.Context(), platform), slug, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.clock.now().Add(settings.DefaultLinkLifetime); !expires.Equal(want) {
		t.Errorf("link expires %s, want %s", expires, want)
	}
	return u
}

// browser is a client with its own cookies that follows no redirect, as each test reads them.
type browser struct {
	t      *testing.T
	client *http.Client
	header http.Header // sent with every request
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, header: http.Header{}, client: &http.Client{
		Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, u string, form url.Values, header ...string) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header = b.header.Clone()
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(data)}
}

// signIn opens a new link in b and returns the page it lands on.
func (f *fixture) signIn(t *testing.T, b *browser) answer {
	t.Helper()
	if a := f.enter(t, b, f.link(t, "Marcel")); a.status != http.StatusSeeOther || a.header.Get("Location") != settings.Path {
		t.Fatalf("open link: got %d to %q, want 303 to %s", a.status, a.header.Get("Location"), settings.Path)
	}
	page := b.do(http.MethodGet, f.web.URL+settings.Path, nil)
	if page.status != http.StatusOK {
		t.Fatalf("page after sign-in: got %d %s", page.status, page.body)
	}
	return page
}

// enter opens link in b as its page's button does: the page first, then its form.
func (f *fixture) enter(t *testing.T, b *browser, link string) answer {
	t.Helper()
	if a := b.do(http.MethodGet, link, nil); a.status != http.StatusOK || !strings.Contains(a.body, `name="secret"`) {
		t.Fatalf("the login link's page: got %d %.300s", a.status, a.body)
	}
	return b.do(http.MethodPost, f.web.URL+settings.Path+"open", url.Values{"secret": {secretOf(link)}})
}

// secretOf returns the secret of a login link.
func secretOf(link string) string { return link[strings.LastIndex(link, "/")+1:] }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token returns the form token of a page.
func token(t *testing.T, page answer) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no form token in the page: %.300s", page.body)
	}
	return m[1]
}

// post sends a form of the page with the session's token.
func (f *fixture) post(b *browser, path, csrf string, fields ...string) answer {
	form := url.Values{"csrf": {csrf}}
	for i := 0; i+1 < len(fields); i += 2 {
		form.Set(fields[i], fields[i+1])
	}
	return b.do(http.MethodPost, f.web.URL+settings.Path+path, form)
}
