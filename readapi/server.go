package readapi

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/julienschmidt/httprouter"
)

// Config holds what New needs.
type Config struct {
	// Mirror supplies the establishments to serve. Required.
	Mirror *Mirror
	// Logger receives recovered panics. Required.
	Logger *slog.Logger
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
	return errors.Join(errs...)
}

// Server answers the read API and the file redirects from a mirror of the dockey bucket.
type Server struct {
	source  documentSource
	logger  *slog.Logger
	handler http.Handler
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newServer(cfg.Mirror, cfg.Logger), nil
}

func newServer(source documentSource, logger *slog.Logger) *Server {
	s := &Server{source: source, logger: logger}
	s.handler = s.routes()
	return s
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// routes is the whole HTTP surface. Every route answers GET and HEAD; any other method on a known
// path is 405 and an unknown path is 404, both with a JSON error body. Paths are matched as they
// are: no redirect to a cleaned path or a trailing slash.
func (s *Server) routes() http.Handler {
	router := httprouter.New()
	router.RedirectTrailingSlash = false
	router.RedirectFixedPath = false
	router.HandleOPTIONS = false
	router.HandleMethodNotAllowed = true
	router.NotFound = http.HandlerFunc(s.notFound)
	router.MethodNotAllowed = http.HandlerFunc(s.methodNotAllowed)

	get := func(path string, h httprouter.Handle) {
		router.Handle(http.MethodGet, path, h)
		router.Handle(http.MethodHead, path, h)
	}
	get("/api/v1/establishments/:slug", s.getEstablishment)
	get("/api/v1/establishments/:slug/hours", s.getHours)
	get("/api/v1/establishments/:slug/menus", s.getMenus)
	get("/api/v1/establishments/:slug/menus/:menu_type", s.getMenu)
	get("/r/master_menu", s.redirectMasterMenu)
	get("/r/menus", s.redirectMenus)

	// Middleware, outermost first. The per-IP quota (every request under /api/) goes right
	// after recover; the per-key quota runs in authorize, once the key is known valid.
	return chain(router,
		s.recoverPanics,
	)
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

// notFound answers a path no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, notFound)
}

// methodNotAllowed answers a known path asked with a method other than GET or HEAD.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header()["Allow"] = allowGetHead // every route has exactly these two
	writeError(w, r, methodNotAllowed)
}

// Timeouts and limits of NewHTTPServer. Requests have no body and small headers; the longest
// answer is one menu document.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
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
