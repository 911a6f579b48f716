package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/clock"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/heapfloor"
	"github.com/opencarte/publisher/cmd/publisher/listeners"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/supervise"
	"github.com/opencarte/publisher/cmd/publisher/telemetry"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
	"github.com/opencarte/publisher/readapi"
	apiusage "github.com/opencarte/publisher/readapi/usage"
	"github.com/opencarte/publisher/webhook"
	"github.com/opencarte/publisher/webhook/destination"
)

// Main is a running publisher: the wiring of every role, shared by the binary and its
// end-to-end tests.
type Main struct {
	Config Config
	Logger *slog.Logger

	// Set by Open.
	NATS       *server.Server // nil with an external NATS
	Conn       *nats.Conn
	Store      *events.Store
	Docs       jetstream.KeyValue // the generation of the documents bucket served when Open ran
	Files      *events.Files      // uploaded menu files, when the api or admin role runs
	Commands   *app.Commands
	Mirror     *readapi.Mirror
	HTTPURL    string // base URL of the read API, when the api role runs
	AdminURL   string // base URL of the admin API, when the admin role runs
	MetricsURL string // base URL of the metrics listener, when one is configured
	AdminToken string
	Clock      *settableClock
	ClockRole  *clock.Clock        // nil unless the clock role runs
	Webhooks   *webhook.Dispatcher // nil unless the webhook or admin role runs
	// APIUsage answers an establishment's use of the read API as the read nodes report it, when
	// the admin role runs.
	APIUsage func(ctx context.Context, slug domain.Slug) (apiusage.Usage, error)

	node      *node.Node          // the NATS this process talks to, and its connections
	loops     *supervise.Group    // the roles' loops, and what of the process is degraded
	storage   *capacity.Guard     // the room the stores have left
	listeners *listeners.Set      // the HTTP listeners, within the process's file descriptors
	metrics   *telemetry.Registry // nil without a metrics listener
	mirrorLag *telemetry.Lag      // nil without the read API
	heap      *heapfloor.Floor    // the collector's percentage, when GOGC leaves it to serve
	gens      generations         // this process's part in the documents' generations

	destinations *destination.Store // the broker destinations, when the webhook or admin role runs
	signals      *events.Signals    // the change signals the destinations publish

	// adminBound is the admin listener's base URL once bound, before it serves: the base of the
	// settings page's login links unless --admin-public-url sets one.
	adminBound string

	// wrapAdmin, when set before Open, wraps the admin API's handler: the end-to-end tests check
	// every admin answer against the admin API's description there.
	wrapAdmin func(http.Handler) http.Handler
}

// generations is what a process follows and runs of the documents' generations.
type generations struct {
	watch     *generation.Watch      // which generation is served
	projector *generation.Supervisor // the projector under its lease; nil without the role
	served    *generation.Waiter     // answers when a change is served
}

// Projector returns the projector this process runs, nil when it runs none (another process holds
// the lease, or a rebuild is switching generations).
func (m *Main) Projector() *runner.Projector {
	if m.gens.projector == nil {
		return nil
	}
	return m.gens.projector.Projector()
}

// Open starts everything the configuration asks for and returns once the roles run.
func (m *Main) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if err := m.prepare(); err != nil {
		return err
	}
	if err := m.bindListeners(); err != nil {
		return err
	}
	if err := m.connect(); err != nil {
		return err
	}
	js, err := jetstream.New(m.Conn)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	c := &m.Config
	if err := m.node.AwaitConnection(ctx); err != nil {
		return err
	}
	if err := m.openStorageGuard(ctx); err != nil {
		return err
	}
	shared, err := m.startEventLog(ctx, js)
	if err != nil {
		return err
	}
	if c.has(roleWebhook) || c.has(roleAdmin) {
		if err := m.openWebhooks(ctx); err != nil {
			return err
		}
		if err := m.openDestinations(ctx, js, shared.signals); err != nil {
			return err
		}
	}
	if err := m.openCommands(ctx, js, shared.snapshots); err != nil {
		return err
	}
	if c.has(roleProjector) {
		if err := m.startProjector(ctx, js, shared.signals); err != nil {
			return err
		}
	}
	// The clock does not wait for the read API: a restart across midnight starts the days at once.
	if c.has(roleClock) {
		if err := m.startClock(ctx); err != nil {
			return err
		}
	}
	if c.has(roleAPI) {
		if err := m.startAPI(ctx); err != nil {
			return err
		}
	}
	m.gens.served = m.newWaiter(js)
	if c.has(roleAdmin) {
		if err := m.startAdmin(ctx, shared.signals); err != nil {
			return err
		}
	}
	return m.startLast()
}

// prepare checks the configuration and sets up what every role uses: the logger, the group of the
// roles' loops, the date, the metrics registry and the connection budget.
func (m *Main) prepare() error {
	if m.Logger == nil {
		m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &m.Config
	m.loops = supervise.New(m.Logger)
	if c.Replicas < 1 {
		return fmt.Errorf("--replicas: want at least 1, got %d", c.Replicas)
	}
	m.Clock = &settableClock{}
	if c.Today != "" && c.CalendarFrom != "" {
		return errors.New("--today and --calendar-from: give one or the other")
	}
	if c.Today != "" {
		d, err := domain.ParseLocalDate(c.Today)
		if err != nil {
			return fmt.Errorf("--today: %w", err)
		}
		m.Clock.Set(d)
	}
	if c.CalendarFrom != "" {
		from, err := time.Parse(time.RFC3339, c.CalendarFrom)
		if err != nil {
			return fmt.Errorf("--calendar-from: want an RFC 3339 instant such as 2026-11-24T23:58:00+01:00: %w", err)
		}
		m.Clock.Shift(time.Until(from))
	}
	if c.MetricsAddr != "" {
		m.metrics = telemetry.New()
	}
	b := capacity.NewBudget(capacity.OpenFileLimit(), c.MaxConns, c.MaxConnsPerClient, readapi.DefaultFileDescriptors)
	m.Logger.Info("connection limits", "open_file_limit", b.FDLimit, "reserved", b.Reserve,
		"read_api", b.API, "admin_api", b.Admin, "metrics", b.Metrics, "per_client", b.PerClient, "files", b.Files)
	m.listeners = listeners.New(listeners.Config{Budget: b, TrustedProxies: c.TrustedProxies, Logger: m.Logger, Fatal: m.loops.Fatal})
	return nil
}

// bindListeners binds every HTTP listener the process serves before anything else starts, so that
// an address in use fails the start at once, naming the flag that sets it; the embedded NATS
// server's is checked as it starts. The read API's answers at once, not ready until it is, and the
// URLs of uploaded files name the port it got.
func (m *Main) bindListeners() error {
	c := &m.Config
	if c.has(roleAPI) {
		url, err := m.listeners.BindAPI(c.HTTPAddr)
		if err != nil {
			return listenError("read api", "--http", err)
		}
		m.HTTPURL = url
	}
	if c.has(roleAdmin) {
		url, err := m.listeners.Bind(c.AdminAddr, capacity.ListenerAdmin, "admin api")
		if err != nil {
			return listenError("admin api", "--admin", err)
		}
		m.adminBound = addrfile.Reachable(url)
	}
	if m.metrics != nil {
		if _, err := m.listeners.Bind(c.MetricsAddr, capacity.ListenerMetrics, "metrics"); err != nil {
			return listenError("metrics", "--metrics", err)
		}
	}
	return nil
}

// listenError is the failure to bind the listener what, whose address flag sets.
func listenError(what, flag string, err error) error {
	return fmt.Errorf("%s: %w (set another address with %s)", what, err, flag)
}

// newWaiter returns what answers when a change is served, on this process's projector or
// another's, and in the read API when this process serves it.
func (m *Main) newWaiter(js jetstream.JetStream) *generation.Waiter {
	w := &generation.Waiter{Supervisor: m.gens.projector, Watch: m.gens.watch, JetStream: js}
	if m.Mirror != nil {
		w.Mirror = m.Mirror
	}
	return w
}

// startLast starts what waits for every role: the metrics listener, with the readings of the
// process's parts, the storage guard's readings and the webhook deliveries.
func (m *Main) startLast() error {
	if m.metrics != nil {
		m.metrics.Process(telemetry.Process{
			Conns: m.node.Conns, Log: m.Store, Storage: m.storage, Listeners: m.listeners,
			Generation: func() int { g, _ := m.gens.watch.State(); return g.Served() },
		})
		m.MetricsURL = m.listeners.Serve(capacity.ListenerMetrics, m.metrics.Handler())
	}
	// The storage guard's periodic readings start once every part is wired: what it calls on
	// the roles after starting JetStream again is complete then.
	m.loops.Go("storage guard", m.storage.Run)
	// Deliveries start last: after a stop, the windows that fell due meanwhile all close at
	// once, and the read API's mirror should not wait behind them.
	if m.Config.has(roleWebhook) {
		m.loops.Go(roleWebhook, m.Webhooks.Run)
		m.loops.Go("destinations", m.runDestinations)
	}
	return nil
}

// PublicURL is the base URL of the read API as its clients reach it: --public-url, else --http as
// written (localhost for a wildcard address; the port the api role got for port 0), as verify
// and a process of other roles given the same --http make it.
func (m *Main) PublicURL() string {
	if m.Config.PublicURL != "" {
		return strings.TrimRight(m.Config.PublicURL, "/")
	}
	addr := m.Config.HTTPAddr
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		if m.HTTPURL != "" {
			addr = strings.TrimPrefix(m.HTTPURL, "http://")
		}
	}
	return localURL(addr)
}

// localURL is the http URL of listen address addr on this machine.
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Err reports the failure of a listener, which the process cannot go on without.
func (m *Main) Err() <-chan error { return m.loops.Err() }

// Degraded names what of the process is degraded, a line each; empty when nothing is.
func (m *Main) Degraded() []string { return m.loops.Degraded() }

// rolesStopWait bounds the wait for the roles to stop once asked.
const rolesStopWait = 15 * time.Second

// Close stops the admin and metrics listeners, the roles, the read API, the NATS connections and
// the embedded server, in that order: reads are answered until the end. No step waits unbounded:
// requests in flight get a grace period, then are told to stop (see package listeners); roles get
// rolesStopWait.
// Acknowledged events are on disk already.
func (m *Main) Close() {
	if m.listeners != nil {
		m.listeners.Shutdown()
	}
	if m.AdminURL != "" {
		addrfile.Forget(m.Config.DataDir, addrfile.Admin)
	}
	if m.loops != nil {
		m.loops.Stop(rolesStopWait)
	}
	if m.listeners != nil {
		m.listeners.ShutdownAPI()
	}
	if m.Webhooks != nil {
		m.Webhooks.Close()
	}
	if m.node != nil {
		m.node.Close()
	}
}

// Served returns once the record at sequence seq of establishment slug is projected and, when
// this process serves the read API, in its mirror: a read on this node then answers with it.
func (m *Main) Served(ctx context.Context, slug domain.Slug, seq uint64) error {
	return m.gens.served.Served(ctx, slug, seq)
}
