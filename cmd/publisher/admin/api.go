package admin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/tokens"
	"github.com/opencarte/publisher/domain"
)

// MaxBodyBytes bounds an admin request body.
const MaxBodyBytes = 4 << 20

// projection lets a write wait until its events are served, when the caller asks for it.
type projection interface {
	// Served returns once the record at sequence seq of establishment slug is served.
	Served(ctx context.Context, slug domain.Slug, seq uint64) error
}

// Config wires an admin API.
type Config struct {
	Commands *app.Commands
	Token    string // bearer token every request must carry
	// Deliveries is optional; it serves the endpoint, delivery log, ping and redelivery routes.
	Deliveries *app.Deliveries
	// Projection is optional; with it, ?wait=true on a write answers once the change is served.
	Projection projection
	Logger     *slog.Logger
	// Observe, when set, is told the route pattern ("POST /admin/v1/…/activate") and the status of
	// every request a route answered: command outcomes by type.
	Observe func(route string, status int)
	// Debug, when set, answers under /admin/debug/, behind the token (profiling).
	Debug http.Handler
	// Platform is optional; it serves the platform webhook endpoints under /admin/v1/webhooks.
	Platform *app.Platform
	// Changes is optional; it serves GET /admin/v1/changes, the changes feed: the page after the
	// cursor after ("" for a first sync) of at most limit establishments, waiting up to wait
	// when it would be empty. Its errors carry their kinds (app.Refusal). MaxInFlight does not
	// count its requests: it bounds the pages it reads at once and the reads that wait.
	Changes func(ctx context.Context, after string, limit int, wait time.Duration) (any, error)
	// Destinations is optional; it serves the broker destinations under /admin/v1/destinations.
	Destinations Destinations
	// Tokens is optional; it serves /admin/v1/tokens, and its tokens are credentials beside
	// Token, each within its scope.
	Tokens *tokens.Store
	// LoginLinks is optional; it serves POST /admin/v1/establishments/{slug}/login-links: it
	// returns the URL of a new login link to slug's API settings page, for the person name
	// (optional), and when the link expires. The actor who asked is in ctx; an unknown
	// establishment is domain.ErrNotFound.
	LoginLinks func(ctx context.Context, slug domain.Slug, name string) (url string, expires time.Time, err error)
	// Status is optional extra status reported by GET /admin/v1/status.
	Status func(ctx context.Context) map[string]any
	// BatchWorkers is how many documents of a batch import are imported at once; 0 is
	// DefaultBatchWorkers.
	BatchWorkers int
	// MaxInFlight is how many requests are handled at once; 0 is DefaultMaxInFlight.
	MaxInFlight int
	// Uploads is how many uploaded files are read and stored at once; 0 is DefaultUploads.
	Uploads int
	// WaitLimit bounds ?wait=true; 0 is DefaultWaitLimit.
	WaitLimit time.Duration
}

// API is the admin HTTP API: the back office's way to change content.
type API struct {
	cfg         Config
	adminDigest [sha256.Size]byte // of Config.Token
	uploads     chan []byte       // the buffers of the files being read and stored; nil until first used
	failures    *failures
}

// NewAPI validates cfg, settles its defaults and returns the API.
func NewAPI(cfg Config) (*API, error) {
	if cfg.Commands == nil || cfg.Logger == nil {
		return nil, errors.New("admin: commands and logger are required")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("admin: token must be at least 16 characters")
	}
	// A count of 0, or less, is its default.
	cfg.BatchWorkers = cmp.Or(max(cfg.BatchWorkers, 0), DefaultBatchWorkers)
	cfg.MaxInFlight = cmp.Or(max(cfg.MaxInFlight, 0), DefaultMaxInFlight)
	cfg.Uploads = cmp.Or(max(cfg.Uploads, 0), DefaultUploads)
	cfg.WaitLimit = cmp.Or(cfg.WaitLimit, DefaultWaitLimit)
	a := &API{cfg: cfg, adminDigest: sha256.Sum256([]byte(cfg.Token)), uploads: make(chan []byte, cfg.Uploads), failures: newFailures()}
	for range cap(a.uploads) {
		a.uploads <- nil
	}
	return a, nil
}
