package readapi

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/readapi/openapi"
)

// Config holds what New needs. Only Mirror and Logger are required; every other field has a
// default, the specification's where it sets one.
type Config struct {
	// Mirror supplies the establishments to serve and tells when they are all loaded. Required.
	Mirror *Mirror
	// Logger receives recovered panics, warnings and, with AccessLog, one line per request.
	// Required.
	Logger *slog.Logger

	// KeyQuota is the number of API requests one key may make per Window: 120 when zero, no
	// per-key quota when negative.
	KeyQuota int
	// IPQuota is the number of API requests one client address may make per Window: 500 when
	// zero, no per-address quota when negative.
	IPQuota int
	// RedirectQuota is the number of file redirect requests one client address may make per
	// Window, counted apart from the API: 500 when zero, none when negative.
	RedirectQuota int
	// Window is the period the quotas are counted over, a whole number of seconds: one hour
	// when zero.
	Window time.Duration
	// MaxClients bounds the clients (addresses, prefixes or keys) each quota keeps track of:
	// 262144 when zero. Past it, the clients closest to a full quota are forgotten first.
	MaxClients int
	// TrustedProxies lists the peers whose X-Forwarded-For header names the client. Empty, the
	// connection's peer is always the client.
	TrustedProxies []netip.Prefix
	// ProxiedClientRequests is how many requests one client behind a trusted proxy may have in
	// flight at once, answered 429 past it: DefaultProxiedClientRequests when zero.
	ProxiedClientRequests int

	// AccessLog writes one line per request to Logger: at Info, at Debug for the probes.
	AccessLog bool
	// Metrics, when set, counts requests by route and status, their latency and quota refusals.
	Metrics *Metrics
	// Behind, when set, says how long the mirror has been behind the bucket (0: it is not); /readyz
	// answers 503 while that is more than MaxLag (0: never).
	Behind func() time.Duration
	MaxLag time.Duration
	// Degraded, when set, names what of the process is degraded (a role failing, storage
	// refusing writes), one line each; /readyz still answers 200, since reads go on, and lists
	// them.
	Degraded func() []string

	// Files, optional, holds the uploaded files served under /files/; without it every file is
	// unknown.
	Files FileSource
	// FileCacheBytes bounds the memory of the files kept to be served without asking Files; 0
	// is DefaultFileCacheBytes, negative keeps none.
	FileCacheBytes int64
	// FileDescriptors bounds the descriptors the files served hold: memory files in the cache,
	// and those being sent with sendfile; 0 is DefaultFileDescriptors.
	FileDescriptors int
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Validate reports every missing or invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	if c.Mirror == nil {
		errs = append(errs, errors.New("readapi: config needs a mirror"))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("readapi: config needs a logger"))
	}
	errs = append(errs, c.validateQuotas()...)
	return errors.Join(errs...)
}

// validateQuotas checks the settings that do not depend on a mirror.
func (c Config) validateQuotas() []error {
	var errs []error
	window := c.window()
	switch {
	case window < 0:
		errs = append(errs, fmt.Errorf("readapi: quota window %v is negative", window))
	case window%time.Second != 0:
		errs = append(errs, fmt.Errorf("readapi: quota window %v is not a whole number of seconds", window))
	}
	for _, q := range []struct {
		name  string
		value int
	}{{"key", c.KeyQuota}, {"ip", c.IPQuota}, {"redirect", c.RedirectQuota}} {
		if window > 0 && int64(q.value) > int64(window) {
			errs = append(errs, fmt.Errorf("readapi: %s quota %d is more than one request per nanosecond of the window", q.name, q.value))
		}
	}
	if c.MaxClients < 0 {
		errs = append(errs, fmt.Errorf("readapi: max clients %d is negative", c.MaxClients))
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("readapi: trusted proxy prefix %v is not valid", p))
		}
	}
	return errs
}

func (c Config) window() time.Duration { return cmp.Or(c.Window, defaultWindow) }

// Server answers the read API and the file redirects from a mirror of the dockey bucket.
type Server struct {
	source  documentSource
	ready   <-chan struct{}
	logger  *slog.Logger
	handler http.Handler

	now     func() time.Time
	epoch   time.Time // the limiters' time zero
	trusted []netip.Prefix
	proxied inflight // requests in flight per client behind a trusted proxy

	ipQuota       *policy  // per client address on the API; nil when off
	keyQuota      *policy  // per key on the API; nil when off
	redirectQuota *policy  // per client address on the redirects; nil when off
	apiPolicies   []string // RateLimit-Policy of API answers; nil when both API quotas are off
	accessLog     bool
	files         *files   // nil without a file source
	metrics       *Metrics // nil without metrics
	behind        func() time.Duration
	maxLag        time.Duration
	degraded      func() []string
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newServer(cfg.Mirror, cfg.Mirror.Ready(), cfg), nil
}

// newServer returns a server of the documents of source, ready once ready is closed, with the
// settings of cfg, which must be valid apart from Mirror.
func newServer(source documentSource, ready <-chan struct{}, cfg Config) *Server {
	s := &Server{
		source:    source,
		ready:     ready,
		logger:    cfg.Logger,
		now:       cfg.Now,
		trusted:   slices.Clone(cfg.TrustedProxies),
		proxied:   inflight{limit: cmp.Or(cfg.ProxiedClientRequests, DefaultProxiedClientRequests), n: make(map[netip.Prefix]int)},
		accessLog: cfg.AccessLog,
		metrics:   cfg.Metrics,
		behind:    cfg.Behind,
		maxLag:    cfg.MaxLag,
		degraded:  cfg.Degraded,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.epoch = s.now()
	window, clients := cfg.window(), cmp.Or(cfg.MaxClients, defaultMaxClients)
	s.ipQuota = newPolicy("ip", cmp.Or(cfg.IPQuota, defaultIPQuota), window, clients)
	s.keyQuota = newPolicy("key", cmp.Or(cfg.KeyQuota, defaultKeyQuota), window, clients)
	s.redirectQuota = newPolicy("redirect", cmp.Or(cfg.RedirectQuota, defaultIPQuota), window, clients)
	var items []string
	for _, p := range []*policy{s.ipQuota, s.keyQuota} {
		if p != nil {
			items = append(items, p.item)
		}
	}
	if len(items) > 0 {
		s.apiPolicies = []string{strings.Join(items, ", ")}
	}
	if cfg.Files != nil {
		capacity := cmp.Or(cfg.FileCacheBytes, DefaultFileCacheBytes)
		s.files = newFiles(cfg.Files, capacity, s.now)
		if cfg.FileDescriptors > 0 {
			s.files.limitDescriptors(cfg.FileDescriptors)
		}
	}
	s.handler = s.routes()
	return s
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// elapsed returns the time since the server started in nanoseconds, the limiters' clock. It is
// monotonic with the default clock.
func (s *Server) elapsed() int64 { return int64(s.now().Sub(s.epoch)) }

// routes is the whole HTTP surface. Every route answers GET and HEAD; any other method on a known
// path is 405 and an unknown path is 404, both with a JSON error body. Paths are matched as they
// are: no redirect to a cleaned path or a trailing slash.
//
// The order of the checks, outermost first: the access log (when on), recover, then, inside each
// API handler, the per-IP quota, the key check and the per-key quota (authorize and
// serveDocument). The quota steps are calls rather than http.Handler middleware because the
// RateLimit field reports the more restrictive of the two quotas: the per-IP decision travels
// to the per-key step as a value, where a request context would cost two allocations a request.
// Redirects count against their own per-IP quota; /healthz, /readyz, the description and the
// reference page (/docs and its files) against none.
func (s *Server) routes() http.Handler {
	router := httprouter.New()
	router.RedirectTrailingSlash = false
	router.RedirectFixedPath = false
	router.HandleOPTIONS = false
	router.HandleMethodNotAllowed = true
	router.NotFound = s.measuredOther(s.notFound)
	router.MethodNotAllowed = s.measuredOther(s.methodNotAllowed)

	get := func(path string, h httprouter.Handle) {
		router.Handle(http.MethodGet, path, h)
		router.Handle(http.MethodHead, path, h)
	}
	get("/api/v1/establishments/:slug", s.measured(routeEstablishment, s.getEstablishment))
	get("/api/v1/establishments/:slug/hours", s.measured(routeHours, s.getHours))
	get("/api/v1/establishments/:slug/menus", s.measured(routeMenus, s.getMenus))
	get("/api/v1/establishments/:slug/menus/:menu_type", s.measured(routeMenu, s.getMenu))
	get("/api/v1/establishments/:slug/jsonld", s.measured(routeJSONLD, s.getJSONLD))
	get("/r/master_menu", s.measured(routeRedirectMasterMenu, s.redirectMasterMenu))
	get("/r/menus", s.measured(routeRedirectMenus, s.redirectMenus))
	get("/files/:name", s.measured(routeFile, s.serveFile))
	get("/healthz", s.measured(routeHealthz, s.healthz))
	get("/readyz", s.measured(routeReadyz, s.readyz))
	get(openapi.JSONPath, s.measured(routeOpenAPI, descriptionJSON.serve))
	get(openapi.YAMLPath, s.measured(routeOpenAPI, descriptionYAML.serve))
	get(docsPath, s.measured(routeDocs, serveDocs))
	get(docsPath+"/:file", s.measured(routeDocs, serveDocs))

	var middleware []func(http.Handler) http.Handler
	if s.accessLog {
		middleware = append(middleware, s.logRequests)
	}
	middleware = append(middleware, s.recoverPanics, s.escapedSlashNotFound)
	if len(s.trusted) > 0 {
		middleware = append(middleware, s.limitProxiedClients)
	}
	return chain(router, middleware...)
}

// escapedSlashNotFound answers 404 for a path holding an escaped slash (%2F). The router matches
// the unescaped path, where that slash would separate segments and make
// /establishments/x%2Fhours a second address of /establishments/x/hours; as data, a slash is
// in no slug, so no such path names a resource.
func (s *Server) escapedSlashNotFound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// RawPath is set only when the path was sent with escapes its canonical form lacks.
		if raw := r.URL.RawPath; raw != "" && (strings.Contains(raw, "%2F") || strings.Contains(raw, "%2f")) {
			s.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// chain wraps h in middleware, the first one outermost.
func chain(h http.Handler, middleware ...func(http.Handler) http.Handler) http.Handler {
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return h
}

// recoverPanics turns a panic in a handler into a logged 500 with a JSON body.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer s.recovered(w, r)
		next.ServeHTTP(w, r)
	})
}

// recovered is deferred by recoverPanics; it must call recover itself.
func (s *Server) recovered(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v) // net/http's way to abort a response; it logs nothing for it
	}
	s.logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
		"panic", v, "stack", string(debug.Stack()))
	clear(w.Header())
	writeError(w, r, internalError)
}

// notFound answers a path no route matches. A path under /api/ is an API request and counts
// against the per-IP quota like any other.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		if _, ok := s.admitClient(w, r); !ok {
			return
		}
	}
	writeError(w, r, notFound)
}

// methodNotAllowed answers a known path asked with a method other than GET or HEAD, counted
// against the quota of its family.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	switch {
	case isAPIPath(r.URL.Path):
		if _, ok := s.admitClient(w, r); !ok {
			return
		}
	case strings.HasPrefix(r.URL.Path, "/r/"), strings.HasPrefix(r.URL.Path, "/files/"):
		if !s.admitRedirect(w, r) {
			return
		}
	}
	w.Header()["Allow"] = allowGetHead // every route has exactly these two
	writeError(w, r, methodNotAllowed)
}

// isAPIPath reports whether path is under the API prefix, where the per-IP quota applies.
func isAPIPath(path string) bool { return strings.HasPrefix(path, "/api/") }

// Timeouts and limits of NewHTTPServer. Requests have no body and small headers; the longest
// answer is one menu document.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 32 << 10
)

// NewHTTPServer returns an http.Server for h listening on addr, with every timeout set and a
// small header limit.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
