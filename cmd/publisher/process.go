package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/clock"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/runner"
	"github.com/opencarte/publisher/readapi"
	"github.com/opencarte/publisher/webhook"
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

	node   *node.Node // the NATS this process talks to, and its connections
	cancel context.CancelFunc
	wg     sync.WaitGroup // the roles' loops
	// budget shares the process's file descriptors between its listeners; reads is the read
	// API's listener, closed last, listeners the others.
	storage   *capacity.Guard // the room the stores have left
	budget    capacity.Budget
	reads     *listening
	listeners []*listening
	apiLn     net.Listener // the read API's listener, bound before the roles start
	// starting answers on apiLn until the read API is ready; waiting is what the process waits
	// for meanwhile, nil when nothing.
	starting  *startingHandler
	waiting   atomic.Pointer[string]
	metrics   *prometheus.Registry // nil without a metrics listener
	mirrorLag *mirrorLag           // nil without the read API
	// generations follows which generation of the documents is served; projector supervises
	// the projector, nil without the role.
	generations *generation.Watch
	projector   *generation.Supervisor
	// served answers when a change is served.
	served *generation.Waiter
	errc   chan error
	health health
}

// Projector returns the projector this process runs, nil when it runs none (another process holds
// the lease, or a rebuild is switching generations).
func (m *Main) Projector() *runner.Projector {
	if m.projector == nil {
		return nil
	}
	return m.projector.Projector()
}

// Open starts everything the configuration asks for and returns once the roles run.
func (m *Main) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	runCtx, err := m.prepare()
	if err != nil {
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
	if c.has(roleAPI) {
		if err := m.bindAPI(); err != nil {
			return err
		}
	}
	if err := m.node.AwaitConnection(ctx); err != nil {
		return err
	}
	if err := m.openStorageGuard(ctx); err != nil {
		return err
	}
	shared, err := m.startEventLog(ctx, runCtx, js)
	if err != nil {
		return err
	}
	if c.has(roleWebhook) || c.has(roleAdmin) {
		if err := m.openWebhooks(ctx); err != nil {
			return err
		}
	}
	if err := m.openCommands(ctx, js, shared.snapshots); err != nil {
		return err
	}
	if c.has(roleProjector) {
		if err := m.startProjector(ctx, runCtx, js, shared.signals); err != nil {
			return err
		}
	}
	if m.metrics != nil {
		m.openMetrics()
		m.addWebhookMetrics()
	}
	// The clock does not wait for the read API: a restart across midnight starts the days at once.
	if c.has(roleClock) {
		if err := m.startClock(ctx, runCtx); err != nil {
			return err
		}
	}
	if c.has(roleAPI) {
		if err := m.startAPI(ctx, runCtx); err != nil {
			return err
		}
	}
	m.served = m.newWaiter(js)
	if c.has(roleAdmin) {
		if err := m.startAdmin(ctx, runCtx); err != nil {
			return err
		}
	}
	return m.startLast(runCtx)
}

// prepare checks the configuration and sets up what every role uses: the logger, the date, the
// context of the roles' loops, the metrics registry and the connection budget.
func (m *Main) prepare() (runCtx context.Context, err error) {
	if m.Logger == nil {
		m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &m.Config
	if c.Replicas < 1 {
		return nil, fmt.Errorf("--replicas: want at least 1, got %d", c.Replicas)
	}
	m.Clock = &settableClock{}
	if c.Today != "" {
		d, err := domain.ParseLocalDate(c.Today)
		if err != nil {
			return nil, fmt.Errorf("--today: %w", err)
		}
		m.Clock.Set(d)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.errc = make(chan error, 8)
	if c.MetricsAddr != "" {
		m.metrics = prometheus.NewRegistry()
	}
	m.budget = capacity.NewBudget(capacity.OpenFileLimit(), c.MaxConns, c.MaxConnsPerClient, readapi.DefaultFileDescriptors)
	m.Logger.Info("connection limits", "open_file_limit", m.budget.FDLimit, "reserved", m.budget.Reserve,
		"read_api", m.budget.API, "admin_api", m.budget.Admin, "metrics", m.budget.Metrics, "per_client", m.budget.PerClient, "files", m.budget.Files)
	return runCtx, nil
}

// bindAPI binds the read API's listener first, so that the URLs of uploaded files name the port
// it got, and answers on it at once: not ready, and what for, until the read API is.
func (m *Main) bindAPI() error {
	var err error
	if m.apiLn, err = net.Listen("tcp", m.Config.HTTPAddr); err != nil {
		return fmt.Errorf("read api: %w", err)
	}
	m.HTTPURL = "http://" + m.apiLn.Addr().String()
	m.starting = &startingHandler{m: m}
	m.serve(m.apiLn, capacity.ListenerAPI, "read api", m.starting)
	return nil
}

// sharedStreams are what the event log's roles share beside it, opened once by startEventLog.
type sharedStreams struct {
	snapshots *events.Snapshots
	signals   *events.Signals
}

// startEventLog provisions the event log and what every role shares: the generations record,
// followed from here on, the documents bucket served, the snapshots and the change signals.
func (m *Main) startEventLog(ctx, runCtx context.Context, js jetstream.JetStream) (sharedStreams, error) {
	c := &m.Config
	var shared sharedStreams
	var err error
	m.Store, err = provision(ctx, m, "the event log", func(ctx context.Context) (*events.Store, error) {
		return events.Open(ctx, m.Conn, events.Config{Replicas: c.Replicas, Duplicates: c.DuplicateTTL})
	})
	if err != nil {
		return shared, fmt.Errorf("open event log: %w", err)
	}
	if err := m.startGenerations(ctx, runCtx, js); err != nil {
		return shared, err
	}
	if shared.snapshots, err = provision(ctx, m, "the snapshots bucket", func(ctx context.Context) (*events.Snapshots, error) {
		return events.OpenSnapshots(ctx, m.Conn, c.Replicas)
	}); err != nil {
		return shared, fmt.Errorf("open snapshots: %w", err)
	}
	if shared.signals, err = provision(ctx, m, "the change signals", func(ctx context.Context) (*events.Signals, error) {
		return events.OpenSignals(ctx, m.Conn, c.Replicas)
	}); err != nil {
		return shared, fmt.Errorf("open change signals: %w", err)
	}
	return shared, nil
}

// startGenerations follows the generations record, and opens the documents bucket of the
// generation served: the projector's creates it.
func (m *Main) startGenerations(ctx, runCtx context.Context, js jetstream.JetStream) error {
	c := &m.Config
	var err error
	m.generations, err = provision(ctx, m, "the generations bucket", func(ctx context.Context) (*generation.Watch, error) {
		return generation.OpenWatch(ctx, js, c.Replicas, m.Logger)
	})
	if err != nil {
		return fmt.Errorf("open generations bucket: %w", err)
	}
	m.run(runCtx, "generations", m.generations.Run)
	m.node.OnReconnect(m.Conn, m.generations.Rewatch)
	g, _ := m.generations.State()
	m.Docs, err = provision(ctx, m, "the documents bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		switch {
		case c.has(roleProjector):
			docs, _, err := generation.OpenBuckets(ctx, js, g.Served(), c.Replicas)
			return docs, err
		case g.Served() == 1:
			return runner.OpenBucket(ctx, js, c.Replicas)
		}
		name, _ := runner.GenerationBuckets(g.Served())
		return js.KeyValue(ctx, name)
	})
	if err != nil {
		return fmt.Errorf("open documents bucket: %w", err)
	}
	return nil
}

// openWebhooks opens the webhook dispatcher on its own connection: the webhook role delivers
// with it, the admin role registers endpoints.
func (m *Main) openWebhooks(ctx context.Context) error {
	c := &m.Config
	wc, err := m.node.Dial(roleWebhook)
	if err != nil {
		return err
	}
	masterKeys, err := m.masterKeys()
	if err != nil {
		return err
	}
	onAttempt := m.webhookAttempts() // once: the start below may be tried again
	m.Webhooks, err = provision(ctx, m, "the webhook streams and buckets", func(ctx context.Context) (*webhook.Dispatcher, error) {
		return webhook.Open(ctx, wc, webhook.Config{
			Window: c.WebhookWindow, Timeout: c.WebhookTimeout, AllowPrivate: c.WebhookAllowPrivate,
			AllowedNetworks: c.WebhookNetworks, RootCAs: c.WebhookRootCAs, Replicas: c.Replicas, MasterKeys: masterKeys,
			OnAttempt: onAttempt,
			Logger:    m.Logger.With("role", roleWebhook),
		})
	})
	if err != nil {
		return fmt.Errorf("open webhook dispatcher: %w", err)
	}
	m.node.OnReconnect(wc, m.Webhooks.Reconnected)
	return nil
}

// startClock starts the clock role, which starts the establishments' days.
func (m *Main) startClock(ctx, runCtx context.Context) error {
	c := &m.Config
	index, err := provision(ctx, m, "the calendar index", func(ctx context.Context) (*clock.Index, error) {
		return clock.OpenIndex(ctx, m.Conn, c.Replicas)
	})
	if err != nil {
		return fmt.Errorf("open calendar index: %w", err)
	}
	m.ClockRole, err = clock.New(clock.Config{
		Days: m.Commands, Log: m.Store, Index: index, Today: m.Clock.Today,
		Interval: c.ClockEvery, Logger: m.Logger.With("role", roleClock),
	})
	if err != nil {
		return err
	}
	m.addClockMetrics()
	m.run(runCtx, roleClock, m.ClockRole.Run)
	return nil
}

// newWaiter returns what answers when a change is served, on this process's projector or
// another's, and in the read API when this process serves it.
func (m *Main) newWaiter(js jetstream.JetStream) *generation.Waiter {
	w := &generation.Waiter{Supervisor: m.projector, Watch: m.generations, JetStream: js}
	if m.Mirror != nil {
		w.Mirror = m.Mirror
	}
	return w
}

// startLast starts what waits for every role: the metrics listener, the storage guard's
// readings and the webhook deliveries.
func (m *Main) startLast(runCtx context.Context) error {
	if m.metrics != nil {
		if err := m.serveMetrics(m.Config.MetricsAddr); err != nil {
			return err
		}
	}
	// The storage guard's periodic readings start once every part is wired: what it calls on
	// the roles after starting JetStream again is complete then.
	m.run(runCtx, "storage guard", m.storage.Run)
	// Deliveries start last: after a stop, the windows that fell due meanwhile all close at
	// once, and the read API's mirror should not wait behind them.
	if m.Config.has(roleWebhook) {
		m.run(runCtx, roleWebhook, m.Webhooks.Run)
	}
	return nil
}

// startProjector runs the projector under its lease, one process at a time, on the generation
// of the documents current.
func (m *Main) startProjector(ctx, runCtx context.Context, js jetstream.JetStream, signals *events.Signals) error {
	c := &m.Config
	var rendered func()
	if m.metrics != nil {
		counter := prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "publisher", Subsystem: "projector", Name: "changes_total",
			Help: "Establishments whose documents the projector stored at a new revision.",
		})
		m.metrics.MustRegister(counter)
		rendered = counter.Inc
	}
	// --projector-replay asks for one replay, by the first projector this process runs: not
	// again after a switch of generations, which a replay would make a rebuild refuse.
	var replayAsked atomic.Bool
	replayAsked.Store(c.ProjectorReplay)
	sup, err := generation.NewSupervisor(generation.Config{
		JetStream: js, Replicas: c.Replicas, Watch: m.generations, Holder: processName(), Embedded: m.NATS != nil,
		New: func(docs, state jetstream.KeyValue) (*runner.Projector, error) {
			notifier := generation.SignalNotifier{Signals: signals, Count: rendered}
			return runner.New(runner.Config{
				Store: m.Store, KV: docs, State: state, CacheSize: c.ProjectorCache, ReplayAll: replayAsked.Swap(false),
				Logger: m.Logger.With("role", roleProjector),
				// A change signal goes out once every document of the new revision is stored.
				Notifier: notifier, Announcements: notifier, AllAnnouncements: notifier,
				// A bundle larger than the server accepts is refused at once rather than retried.
				MaxValueSize: m.maxBundle(),
				Workers:      c.ProjectorWorkers,
				SpillDir:     c.DataDir,
				FilesURL:     m.PublicURL(),
				Now:          c.Now, // the clock that dates the records
			})
		},
		Provision: m.node.Provision, Health: &m.health, Logger: m.Logger,
		Pause: restartPause, MaxPause: restartMaxPause, Healthy: healthyAfter,
	})
	if err != nil {
		return err
	}
	if err := sup.Start(ctx); err != nil {
		return err
	}
	m.projector = sup
	m.run(runCtx, roleProjector, sup.Run)
	return nil
}

// processName names this process to operators: its host and process id, and a random part
// (containers often all run as process 1).
func processName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), app.NewID("p"))
}

// openCommands sets up the write side's application layer, with the files store when the api or
// admin role runs.
func (m *Main) openCommands(ctx context.Context, js jetstream.JetStream, snapshots *events.Snapshots) error {
	if c := &m.Config; c.has(roleAPI) || c.has(roleAdmin) {
		var err error
		if m.Files, err = provision(ctx, m, "the files store", func(ctx context.Context) (*events.Files, error) {
			return events.OpenFiles(ctx, js, c.Replicas)
		}); err != nil {
			return err
		}
	}
	cfg := app.Config{
		Log: m.Store, Snapshots: snapshots, Clock: m.Clock.Today, Logger: m.Logger,
		CacheSize: m.Config.CacheSize, SnapshotEvery: m.Config.SnapshotEach,
		PublicURL: m.PublicURL(), FileGrace: m.Config.FileGrace, Now: m.Config.Now,
		Room: m.storage.Full,
	}
	if m.Files != nil {
		cfg.Files = m.Files
	}
	if m.Webhooks != nil {
		cfg.Webhooks = endpointRegistry{m.Webhooks.Registry()}
	}
	// A change is refused when the establishment's documents would not fit the bucket: accepted,
	// it could never be served.
	maxBundle := m.maxBundle()
	cfg.CheckContent = func(e *domain.Establishment, created bool, eventBytes int) error {
		if created && !projections.NamesFiles(e) && projections.CreatedBound(eventBytes) <= maxBundle {
			return nil // an establishment this small fits without being rendered
		}
		fits, n, err := projections.FitsIn(e, m.PublicURL(), maxBundle)
		if err != nil {
			return err
		}
		if !fits {
			return fmt.Errorf("%w: the published documents would take %d bytes, at most %d", app.ErrTooLarge, n, maxBundle)
		}
		return nil
	}
	var err error
	m.Commands, err = app.New(cfg)
	return err
}

// startAPI starts the mirror in runCtx and serves the read API once it caught up, unless ctx,
// the start's context, ends first.
func (m *Main) startAPI(ctx, runCtx context.Context) error {
	mc, err := m.node.Dial(roleAPI)
	if err != nil {
		return err
	}
	mjs, err := jetstream.New(mc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	files, err := provision(ctx, m, "the files store", func(ctx context.Context) (*events.Files, error) {
		return events.OpenFiles(ctx, mjs, m.Config.Replicas)
	})
	if err != nil {
		return err
	}
	if err := m.startMirror(ctx, runCtx, mc, mjs); err != nil {
		return err
	}
	if err := m.awaitMirror(ctx); err != nil {
		return err
	}
	return m.serveAPI(ctx, runCtx, mc, mjs, files)
}

// startMirror loads the documents of the generation served into the read API's mirror, and
// keeps it on the generation served from then on.
func (m *Main) startMirror(ctx, runCtx context.Context, mc *nats.Conn, mjs jetstream.JetStream) error {
	// The read API binds to the generation of the documents bucket served, which a process with
	// other roles may be creating: it waits for it.
	g, _ := m.generations.State()
	docs, err := provision(ctx, m, "the documents bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		name, _ := runner.GenerationBuckets(g.Served())
		return mjs.KeyValue(ctx, name)
	})
	if err != nil {
		return fmt.Errorf("open documents bucket: %w", err)
	}
	m.Mirror, err = readapi.NewMirror(docs, m.Logger.With("role", roleAPI))
	if err != nil {
		return err
	}
	m.node.OnReconnect(mc, m.Mirror.Rewatch)
	m.run(runCtx, "mirror", m.Mirror.Run)
	m.run(runCtx, "mirror generations", func(ctx context.Context) error { return m.generations.Follow(ctx, mjs, m.Mirror, g.Served()) })
	// A rebuild removes the old generation once no read node serves it: each says which it serves.
	if err := generation.AnswerServed(mc, func() string { return m.Mirror.Bucket().Bucket() }); err != nil {
		return fmt.Errorf("read api: %w", err)
	}
	return nil
}

// awaitMirror returns once the mirror holds what the bucket holds; before that every answer would
// be a 404. A large bucket on a busy node (a restart across midnight) can take a while: it waits,
// saying so.
func (m *Main) awaitMirror(ctx context.Context) error {
	waited := time.Now()
	for {
		t := time.NewTimer(30 * time.Second)
		select {
		case <-m.Mirror.Ready():
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("read api: documents mirror not caught up: %w", ctx.Err())
		case <-t.C:
			m.Logger.Warn("read api: the documents mirror is still catching up", "waited", time.Since(waited).Round(time.Second))
		}
	}
}

// serveAPI has the read API answer on its listener, in place of the starting handler.
func (m *Main) serveAPI(ctx, runCtx context.Context, mc *nats.Conn, mjs jetstream.JetStream, files *events.Files) error {
	c := &m.Config
	var metrics *readapi.Metrics
	if m.metrics != nil {
		var err error
		if metrics, err = readapi.NewMetrics(m.metrics); err != nil {
			return err
		}
		m.addMirrorMetrics()
	}
	lag, err := newMirrorLag(ctx, mjs, m.Mirror)
	if err != nil {
		return err
	}
	m.mirrorLag = lag
	m.run(runCtx, "mirror lag", lag.run)
	srv, err := readapi.New(readapi.Config{
		Mirror: m.Mirror, Logger: m.Logger.With("role", roleAPI), Metrics: metrics,
		Behind: lag.behind, MaxLag: c.ReadyMaxLag, Degraded: m.Degraded,
		KeyQuota: c.KeyQuota, IPQuota: c.IPQuota, RedirectQuota: c.RedirectQuota, Window: c.QuotaWindow,
		TrustedProxies: c.TrustedProxies, ProxiedClientRequests: m.budget.PerClient, AccessLog: c.AccessLog,
		Files: fileSource{files}, FileCacheBytes: c.FileCacheBytes, FileDescriptors: m.budget.Files,
	})
	if err != nil {
		return err
	}
	// Read nodes on a cluster share their quotas: behind a balancer, a client gets its quota
	// across all of them.
	if m.NATS == nil && c.QuotaShareEvery >= 0 {
		m.run(runCtx, "quota sharing", func(ctx context.Context) error { return srv.ShareQuotas(ctx, mc, c.QuotaShareEvery) })
	}
	h := srv.Handler()
	m.starting.real.Store(&h)
	return nil
}

// startAdmin serves the admin API, and runs the admin role's loops: the collection of files
// nothing refers to, and the sweep of signing secrets.
func (m *Main) startAdmin(ctx, runCtx context.Context) error {
	token, err := m.adminToken()
	if err != nil {
		return err
	}
	m.AdminToken = token
	hooks := deliveries{m.Webhooks}
	cfg := admin.Config{
		Commands: m.Commands, Token: token, Deliveries: app.NewDeliveries(m.Commands, hooks, hooks),
		Logger: m.Logger.With("role", roleAdmin), Status: m.status, WaitLimit: m.Config.WaitLimit,
		Debug: debugHandler(), Observe: m.adminObserver(),
	}
	cfg.Projection = m.served
	api, err := admin.NewAPI(cfg)
	if err != nil {
		return err
	}
	url, err := m.listen(m.Config.AdminAddr, capacity.ListenerAdmin, "admin api", api.Handler())
	if err != nil {
		return fmt.Errorf("admin api: %w", err)
	}
	m.AdminURL = url
	if m.Config.FileCollectEvery > 0 {
		m.run(runCtx, "file collection", m.collectFiles)
	}
	m.run(runCtx, "secret sweep", m.sweepSecrets)
	return nil
}

// adminToken returns the configured token, the one in --admin-token-file, or the one kept in the
// data directory, creating it.
func (m *Main) adminToken() (string, error) {
	c := &m.Config
	if c.AdminToken != "" {
		return c.AdminToken, nil
	}
	if c.AdminTokenFile != "" {
		b, err := secretfile.Read(c.AdminTokenFile)
		if err != nil {
			return "", fmt.Errorf("--admin-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("--admin-token-file %s: empty", c.AdminTokenFile)
		}
		return token, nil
	}
	path := filepath.Join(c.DataDir, "admin-token")
	b, err := secretfile.Read(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	token := app.NewID("adm")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return token, nil
}

func (m *Main) status(ctx context.Context) map[string]any {
	out := map[string]any{"roles": rolesOf(m.Config)}
	if d := m.health.snapshot(); len(d) > 0 {
		out["degraded"] = d
	}
	p := m.Projector()
	if p != nil {
		out["projected_sequence"] = p.Position()
	}
	if seq, err := m.Store.LastStreamSequence(ctx); err == nil {
		out["log_sequence"] = seq
		if p != nil {
			out["projector_behind_records"] = seq - min(seq, p.Position())
		}
	}
	if g, _ := m.generations.State(); true {
		out["documents_generation"] = g.Served()
		if g.Rebuild != nil {
			out["rebuild"] = g.Rebuild
		}
	}
	if p, err := m.Store.Placement(ctx); err == nil && p.Leader != "" {
		out["log_placement"] = p
	}
	if m.Mirror != nil {
		out["mirror"] = m.Mirror.Stats()
	}
	if m.mirrorLag != nil {
		out["mirror_behind_seconds"] = m.mirrorLag.behind().Seconds()
	}
	out["memory"] = memoryStatus()
	if m.storage != nil {
		st := m.storage.Status()
		storage := map[string]any{"used_bytes": st.Used, "reserve_bytes": st.Reserve, "writes_refused": st.Full}
		if st.Limit > 0 {
			storage["limit_bytes"] = st.Limit
		}
		if st.VolumeSize > 0 {
			storage["volume_free_bytes"], storage["volume_size_bytes"] = st.VolumeFree, st.VolumeSize
		}
		if st.Full {
			storage["reason"] = st.Reason
		}
		if st.Err != nil {
			storage["error"] = st.Err.Error()
		}
		out["storage"] = storage
	}
	if m.ClockRole != nil {
		out["clock"] = m.ClockRole.Status()
	}
	if m.Webhooks != nil {
		if st, err := m.Webhooks.Stats(ctx); err == nil {
			out["webhooks"] = st
		} else {
			out["webhooks_error"] = err.Error()
		}
	}
	return out
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
		if m.apiLn != nil {
			addr = m.apiLn.Addr().String()
		} else if m.HTTPURL != "" {
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

// collectFiles removes, every FileCollectEvery, the uploaded files nothing refers to. A failed
// pass is logged and tried again at the next one.
func (m *Main) collectFiles(ctx context.Context) error {
	t := time.NewTicker(m.Config.FileCollectEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		rep, err := m.Commands.CollectFiles(ctx)
		if err != nil {
			m.Logger.Warn("file collection failed", "err", err)
			continue
		}
		m.Logger.Info("file collection", "stored", rep.Stored, "referenced", rep.Referenced, "young", rep.Young, "removed", len(rep.Removed), "took", time.Since(start).Round(time.Millisecond))
	}
}

// run starts a loop of the process under supervise: a failure is logged, reported degraded and
// started again, never the end of the process.
func (m *Main) run(ctx context.Context, name string, fn func(context.Context) error) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.supervise(ctx, name, fn)
	}()
}

// Err reports the failure of a listener, which the process cannot go on without.
func (m *Main) Err() <-chan error { return m.errc }

// Degraded names what of the process is degraded, a line each; empty when nothing is.
func (m *Main) Degraded() []string { return m.health.report() }

// Close stops the admin and metrics listeners, the roles, the read API, the NATS connections and
// the embedded server, in that order: reads are answered until the end. No step waits unbounded:
// requests in flight get shutdownGrace, then are told to stop; roles get rolesStopWait.
// Acknowledged events are on disk already.
func (m *Main) Close() {
	var wg sync.WaitGroup
	for _, l := range m.listeners {
		wg.Go(l.shutdown)
	}
	wg.Wait()
	if m.cancel != nil {
		m.cancel()
	}
	stopped := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(rolesStopWait):
		m.Logger.Error("roles still running after being asked to stop; closing without them", "waited", rolesStopWait)
	}
	if m.reads != nil {
		m.reads.shutdown()
	}
	if m.Webhooks != nil {
		m.Webhooks.Close()
	}
	if m.node != nil {
		m.node.Close()
	}
}

// settableClock is the wall clock unless a date is fixed.
type settableClock struct {
	mu    sync.Mutex
	fixed domain.LocalDate
}

// Set fixes the local date of every establishment; the zero date returns to the wall clock.
func (c *settableClock) Set(d domain.LocalDate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = d
}

// Today is an app.Clock.
func (c *settableClock) Today(loc *time.Location) domain.LocalDate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() {
		return c.fixed
	}
	return app.WallClock(loc)
}

// Served returns once the record at sequence seq of establishment slug is projected and, when
// this process serves the read API, in its mirror: a read on this node then answers with it.
func (m *Main) Served(ctx context.Context, slug domain.Slug, seq uint64) error {
	return m.served.Served(ctx, slug, seq)
}

// fileSource serves the read API the uploaded files of the object store.
type fileSource struct{ files *events.Files }

func (s fileSource) Open(ctx context.Context, name string) (readapi.StoredFile, error) {
	fi, err := s.files.Stat(ctx, name)
	if errors.Is(err, events.ErrFileNotFound) {
		return readapi.StoredFile{}, readapi.ErrNoFile
	}
	if err != nil {
		return readapi.StoredFile{}, err
	}
	return readapi.StoredFile{ContentType: fi.ContentType, Size: fi.Size, Reader: func(ctx context.Context, skip int64) io.Reader {
		return s.files.Reader(ctx, fi, skip)
	}}, nil
}

// memoryMetrics are the runtime/metrics the status reports, by the name it gives them.
var memoryMetrics = []struct{ name, metric string }{
	{"heap_live_bytes", "/gc/heap/live:bytes"},
	{"heap_goal_bytes", "/gc/heap/goal:bytes"},
	{"go_total_bytes", "/memory/classes/total:bytes"},
	{"go_released_bytes", "/memory/classes/heap/released:bytes"},
	{"gc_cycles", "/gc/cycles/total:gc-cycles"},
}

// memoryStatus describes the process's memory as the Go runtime sees it: the heap's live bytes
// after the last collection and its goal, and every byte mapped by the runtime (the embedded
// NATS server's included), some of which it has released to the system.
func memoryStatus() map[string]uint64 {
	samples := make([]metrics.Sample, len(memoryMetrics))
	for i, m := range memoryMetrics {
		samples[i].Name = m.metric
	}
	metrics.Read(samples)
	out := make(map[string]uint64, len(samples))
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			out[memoryMetrics[i].name] = s.Value.Uint64()
		}
	}
	return out
}
