package main

import (
	"context"
	"crypto/x509"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/demo"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/heapfloor"
	"github.com/opencarte/publisher/cmd/publisher/logging"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
	"github.com/opencarte/publisher/readapi"
)

// The roles one process can run.
const (
	roleAPI       = "api"
	roleProjector = "projector"
	roleWebhook   = "webhook"
	roleClock     = "clock"
	roleAdmin     = "admin"
)

var allRoles = []string{roleAPI, roleProjector, roleWebhook, roleClock, roleAdmin}

// Config is the configuration of serve.
type Config struct {
	DataDir    string
	NATSURL    string    // empty: run the embedded server
	NATSListen string    // embedded server's client listener, host:port; port -1 picks one
	NATSAuth   node.Auth // credentials and TLS for NATSURL
	SyncAlways bool
	// NATSMaxStore is the embedded server's limit of stored bytes; 0: none of its own, the data
	// volume's free space bounding the store.
	NATSMaxStore int64
	// StorageReserve is the room kept for the service's own writes: writes that grow the stores
	// are refused with 507 once less than this is left on the data volume or under the store's
	// limit. 0: capacity.DefaultReserve.
	StorageReserve int64
	Replicas       int
	HTTPAddr       string
	AdminAddr      string
	// MetricsAddr is the listener of GET /metrics (Prometheus); empty: none.
	MetricsAddr string
	// ReadyMaxLag is how long the read API's mirror may be behind the documents bucket before
	// /readyz answers 503; 0: never.
	ReadyMaxLag time.Duration
	AdminToken  string
	// AdminPublicURL is the admin listener's base URL as browsers reach it (a proxy's): the base of
	// the settings page's login links; empty: the listener's own address.
	AdminPublicURL string
	// SettingsLinkLifetime and SettingsSessionLifetime are how long a login link to the settings
	// page may be opened, and how long the session it opens lasts; 0: their defaults.
	SettingsLinkLifetime    time.Duration
	SettingsSessionLifetime time.Duration
	// SecretKeyFile holds the master keys of webhook signing secrets; SecretKeys, from the
	// environment, the same in a string. Both empty: <data-dir>/secret-key, generated.
	SecretKeyFile string
	SecretKeys    string
	// AdminTokenFile holds the admin token when AdminToken is empty.
	AdminTokenFile string
	Roles          []string
	Today          string // fixed local date YYYY-MM-DD for every establishment; empty: wall clock
	// CalendarFrom, an RFC 3339 instant, runs the calendar from it at the wall clock's pace;
	// empty: the wall clock. Exclusive with Today.
	CalendarFrom string
	// Now, set by tests, is the clock of the write side: the time of its events and of the file
	// collection. nil is the wall clock.
	Now              func() time.Time
	ClockEvery       time.Duration
	Demo             bool
	PublicURL        string // base URL of the read API as clients reach it
	FileCacheBytes   int64
	FileGrace        time.Duration
	FileCollectEvery time.Duration
	CacheSize        int  // aggregates the write side keeps in memory
	SnapshotEach     int  // records folded before an aggregate snapshot is written
	ProjectorWorkers int  // establishments projected at once; 0: runner.WorkersPerCPU per CPU
	ProjectorCache   int  // establishments the projector holds in memory; 0: runner.DefaultCacheSize
	ProjectorReplay  bool // replay the whole log at start instead of resuming from the checkpoint
	LogLevel         string
	DuplicateTTL     time.Duration
	WaitLimit        time.Duration

	KeyQuota      int
	IPQuota       int
	RedirectQuota int
	QuotaWindow   time.Duration
	// QuotaShareEvery is how often read nodes on a cluster report their quota counts to each
	// other; 0 is readapi.DefaultQuotaPeriod, negative turns sharing off.
	QuotaShareEvery time.Duration
	TrustedProxies  []netip.Prefix
	AccessLog       bool
	// MaxConns caps the read API's connections below its share of the file descriptors; 0: the
	// share. MaxConnsPerClient is what one client address may hold on each listener; 0:
	// capacity.DefaultConnsPerClient.
	MaxConns          int
	MaxConnsPerClient int

	// ChangeRetention is how long change signals are kept: how far back the changes feed reaches.
	ChangeRetention time.Duration
	// AuditKeep is how many audit entries each establishment keeps; 0 is events.DefaultAuditKeep.
	AuditKeep int

	WebhookWindow       time.Duration
	WebhookTimeout      time.Duration
	WebhookAllowPrivate bool
	WebhookNetworks     []netip.Prefix
	// WebhookRootCAs, when set, replaces the system roots for receivers' certificates (tests).
	WebhookRootCAs *x509.CertPool

	// HeapFloor is the heap goal the garbage collector's goal is kept at while less is live (see
	// package heapfloor); 0: GOGC alone. It is the process's setting, applied by serve, not by Main.
	HeapFloor int64
}

func (c *Config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory of the embedded NATS server's store, the local admin token, and the projector's temporary files while it replays the whole log in several passes")
	fs.StringVar(&c.NATSURL, "nats-url", "", "URL of an external NATS cluster; empty runs NATS embedded in this process")
	fs.StringVar(&c.NATSListen, "nats-listen", "127.0.0.1:4222", "client listener of the embedded NATS server (port -1: any free port); it accepts only the user in <data-dir>/"+node.SeedFile)
	c.NATSAuth.Register(fs)
	fs.BoolVar(&c.SyncAlways, "sync-always", false, "embedded NATS: fsync every write (survives power loss, slower)")
	fs.Int64Var(&c.NATSMaxStore, "nats-max-store", 0, "embedded NATS: the most bytes JetStream stores (0: no limit of its own; the data volume's free space, watched against --storage-reserve, bounds it)")
	fs.Int64Var(&c.StorageReserve, "storage-reserve", 0, "bytes kept free for the service's own writes (leases, checkpoints, documents, day changes): content writes are refused with 507 once less is left on the data volume or under JetStream's limit (0: 5% of the room, 8 MiB to 1 GiB)")
	fs.IntVar(&c.Replicas, "replicas", 1, "replicas of the event stream and buckets (3 on a cluster)")
	fs.StringVar(&c.HTTPAddr, "http", defaultHTTP, "listen address of the read API and redirects")
	fs.StringVar(&c.AdminAddr, "admin", "127.0.0.1:8081", "listen address of the admin API")
	fs.DurationVar(&c.ReadyMaxLag, "ready-max-lag", 30*time.Second, "/readyz answers 503 while the read API's documents are behind the bucket for longer than this (0: never)")
	fs.StringVar(&c.MetricsAddr, "metrics", "", "listen address of GET /metrics (Prometheus), apart from the read API, such as 127.0.0.1:9464; empty: none")
	fs.StringVar(&c.AdminToken, "admin-token", "", "bearer token of the admin API; empty: --admin-token-file, or generated once and kept in <data-dir>/admin-token")
	fs.StringVar(&c.AdminPublicURL, "admin-public-url", "", "base URL of the admin listener as browsers reach it (behind a proxy, https://...), in the login links of the API settings page (default: the admin listener's address)")
	fs.DurationVar(&c.SettingsLinkLifetime, "settings-link-lifetime", settings.DefaultLinkLifetime, "how long a login link to the API settings page may be opened (once), from 1m to 1h")
	fs.DurationVar(&c.SettingsSessionLifetime, "settings-session-lifetime", settings.DefaultSessionLifetime, "how long a session of the API settings page lasts from the opening of its link, from 5m to 24h")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", "", "a file holding the bearer token of the admin API (a container secret, say)")
	fs.StringVar(&c.SecretKeyFile, "secret-key-file", "", "master keys of webhook signing secrets, one per line in base64, the first encrypting (default <data-dir>/"+defaultSecretKeyFile+", generated; or "+secretKeysEnv+")")
	fs.Func("roles", "comma-separated roles to run: api,projector,webhook,clock,admin (default all)", func(s string) error {
		roles, err := parseRoles(s)
		c.Roles = roles
		return err
	})
	fs.StringVar(&c.Today, "today", "", "fix the local date of every establishment (YYYY-MM-DD), for demos and tests")
	fs.StringVar(&c.CalendarFrom, "calendar-from", "", "run the calendar from this instant (RFC 3339, e.g. 2026-11-24T23:58:00+01:00) at the wall clock's pace, to see a day change happen in demos and tests; exclusive with --today")
	fs.DurationVar(&c.ClockEvery, "clock-interval", 15*time.Second, "how often the clock role checks for a new local day")
	fs.BoolVar(&c.Demo, "demo", false, "load the sample establishment into an empty store (a store holding establishments is left as it is) and print its key and example requests; the key is kept in <data-dir>/"+demoKeyFile)
	fs.IntVar(&c.CacheSize, "aggregate-cache", app.DefaultCacheSize, "establishments the admin and clock roles keep in memory (least recently used first out)")
	fs.IntVar(&c.SnapshotEach, "snapshot-every", app.DefaultSnapshotEvery, "records folded into an establishment before its snapshot is written again")
	fs.IntVar(&c.ProjectorWorkers, "projector-workers", 0, "establishments the projector renders and stores at once (0: 32 per CPU)")
	fs.BoolVar(&c.ProjectorReplay, "projector-replay", false, "replay the whole event log at start instead of resuming from the projector's checkpoint")
	fs.IntVar(&c.ProjectorCache, "projector-cache", runner.DefaultCacheSize, "establishments the projector keeps in memory (least recently projected first out)")
	fs.StringVar(&c.PublicURL, "public-url", "", "base URL of the read API as clients reach it, in the URLs of uploaded files and the demo (default from --http)")
	fs.Int64Var(&c.FileCacheBytes, "file-cache-bytes", readapi.DefaultFileCacheBytes, "memory the read API keeps uploaded files in, to serve them without asking NATS (negative: none)")
	fs.DurationVar(&c.FileGrace, "file-grace", app.DefaultFileGrace, "how long an uploaded file nothing refers to is kept before a collection removes it")
	fs.DurationVar(&c.FileCollectEvery, "file-collect-interval", 6*time.Hour, "how often the admin role removes uploaded files nothing refers to (0: only when asked)")
	fs.Int64Var(&c.HeapFloor, "heap-floor-bytes", heapfloor.Default, "while the Go heap is small, GOGC is raised so that the heap may grow to about this size between collections (0: GOGC alone; GOMEMLIMIT still bounds the heap)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&c.DuplicateTTL, "dedupe-window", time.Hour, "how long a command id is remembered for idempotent retries")
	fs.DurationVar(&c.WaitLimit, "wait-limit", admin.DefaultWaitLimit, "longest ?wait=true waits for a change to be served before answering 202")
	fs.IntVar(&c.KeyQuota, "quota-key", 120, "API requests per key per quota window; negative: no per-key quota")
	fs.IntVar(&c.IPQuota, "quota-ip", 500, "API requests per client address per quota window; negative: no per-address quota")
	fs.IntVar(&c.RedirectQuota, "quota-redirect", 500, "file redirects per client address per quota window; negative: none")
	fs.DurationVar(&c.QuotaWindow, "quota-window", time.Hour, "the period quotas are counted over")
	fs.DurationVar(&c.QuotaShareEvery, "quota-share-interval", readapi.DefaultQuotaPeriod, "with --nats-url, how often read nodes report their quota counts to each other (negative: each node counts alone)")
	fs.Func("trusted-proxies", "comma-separated CIDR prefixes of proxies whose X-Forwarded-For names the client", func(s string) error {
		prefixes, err := parsePrefixes(s)
		c.TrustedProxies = prefixes
		return err
	})
	fs.BoolVar(&c.AccessLog, "access-log", false, "log one line per read API request")
	fs.IntVar(&c.MaxConns, "max-connections", 0, "connections the read API keeps open at most, within what the open file limit leaves once a quarter of it (256 to 4,096) is kept for the process (0: that, at most 16,384)")
	fs.IntVar(&c.MaxConnsPerClient, "max-connections-per-client", capacity.DefaultConnsPerClient, "connections one client address (an IPv6 /64) may keep open on each listener, at most a quarter of the listener's; a trusted proxy's count only in the total")
	fs.DurationVar(&c.ChangeRetention, "change-retention", events.SignalMaxAge, "how long change signals are kept: how far back a cursor of the changes feed (GET /admin/v1/changes) or a platform webhook's position may be; an older cursor is answered 410 (at least 1h)")
	fs.IntVar(&c.AuditKeep, "audit-keep", events.DefaultAuditKeep, "how many audit entries (GET /admin/v1/establishments/{slug}/audit) each establishment keeps, the oldest dropped first")
	fs.DurationVar(&c.WebhookWindow, "webhook-window", 30*time.Second, "changes of one establishment within this window make one webhook delivery")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", 10*time.Second, "time limit of one webhook delivery attempt")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "allow webhook receivers on loopback and private addresses (local use only)")
	fs.Func("webhook-allowed-networks", "comma-separated CIDR prefixes of private networks webhook receivers may be on", func(s string) error {
		prefixes, err := parsePrefixes(s)
		c.WebhookNetworks = prefixes
		return err
	})
}

// webhookAllowHint ends the refusal of a webhook receiver on a loopback or private address, in
// the admin API's answers and in delivery attempts: the flags that allow one.
const webhookAllowHint = "serve allows it with --webhook-allow-private (local use only), or its network with --webhook-allowed-networks"

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, err
		}
		out = append(out, prefix)
	}
	return out, nil
}

func parseRoles(s string) ([]string, error) {
	var roles []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(allRoles, r) {
			return nil, fmt.Errorf("unknown role %q: want %s", r, strings.Join(allRoles, ", "))
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 {
		return nil, errors.New("no role given")
	}
	return roles, nil
}

func (c *Config) has(role string) bool { return len(c.Roles) == 0 || slices.Contains(c.Roles, role) }

// serve runs the roles of Config in this process until ctx ends or one of them fails.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	cfg.flags(fs)
	fs.Usage = envflag.Usage(fs, "publisher serve [flags]")
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return envflag.Usagef("serve", "takes no arguments, got %q", fs.Args())
	}
	if err := cfg.NATSAuth.Load(getenv); err != nil {
		return err
	}
	cfg.SecretKeys = getenv(secretKeysEnv)
	logger, err := logging.New(stderr, cfg.LogLevel)
	if err != nil {
		return err
	}
	if cfg.HeapFloor < 0 || cfg.HeapFloor > heapfloor.Max {
		return envflag.Usagef("serve", "--heap-floor-bytes %d: want 0 to %d", cfg.HeapFloor, int64(heapfloor.Max))
	}
	if cfg.AuditKeep < 1 {
		return envflag.Usagef("serve", "--audit-keep %d: want at least 1", cfg.AuditKeep)
	}
	if err := cfg.checkSettings(); err != nil {
		return err
	}
	if cfg.ChangeRetention < events.DefaultDuplicates {
		return envflag.Usagef("serve", "--change-retention %s: want at least %s, the window in which a signal sent twice is recognised", cfg.ChangeRetention, events.DefaultDuplicates)
	}
	setMemoryLimit(logger, memlimit.FromCgroup, memlimit.FromSystem)
	heap := heapfloor.Start(uint64(cfg.HeapFloor), heapfloor.ProcessGCPercent())
	defer heap.Stop()
	m := &Main{Config: cfg, Logger: logger}
	if getenv("GOGC") == "" {
		m.heap = heap
	}
	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	logger.Info("publisher started", "roles", rolesOf(cfg), "read_api", m.HTTPURL, "admin_api", m.AdminURL, "embedded_nats", m.NATS != nil, "files_url", m.PublicURL())
	if cfg.PublicURL == "" && !cfg.Demo && cfg.has(roleProjector) {
		logger.Warn("uploaded files are given URLs under an address of this machine: set --public-url to the address clients reach", "files_url", m.PublicURL())
	}
	if m.NATS != nil {
		seed := filepath.Join(cfg.DataDir, node.SeedFile)
		logger.Info("embedded nats: it accepts only the nkey user in its seed file", "url", m.NATS.ClientURL(), "store", cfg.DataDir, "seed", seed,
			"nats_cli", fmt.Sprintf("nats -s %s --nkey %s stream ls", m.NATS.ClientURL(), seed))
	}
	if cfg.Demo {
		if err := m.loadDemo(ctx, stdout); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		return nil
	case err := <-m.Err():
		return err
	}
}

// demoSample is the sample establishment --demo loads, in the admin API's JSON: the file the
// documentation and the local cluster's script give as an example too.
//
//go:embed demo.json
var demoSample []byte

// demoKeyFile, in the data directory, keeps the key the demo issued, for later starts to show.
const demoKeyFile = "demo-api-key"

// loadDemo loads the sample establishment into an empty store, or leaves the store as it is, and
// prints the requests that show it.
func (m *Main) loadDemo(ctx context.Context, out io.Writer) error {
	if !m.Config.has(roleProjector) || m.HTTPURL == "" {
		return errors.New("--demo needs the api and projector roles")
	}
	return demo.Load(ctx, demo.Config{
		Sample: demoSample, Commands: m.Commands, Today: m.Clock.Today, Served: m.Served,
		PublicURL: m.PublicURL(), AdminURL: m.AdminURL, AdminToken: m.AdminToken,
		KeyFile: filepath.Join(m.Config.DataDir, demoKeyFile),
	}, out)
}

func rolesOf(c Config) []string {
	if len(c.Roles) == 0 {
		return allRoles
	}
	return c.Roles
}
