package admin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
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
	cfg      Config
	uploads  chan []byte // the buffers of the files being read and stored; nil until first used
	failures *failures
}

// NewAPI validates cfg and returns the API.
func NewAPI(cfg Config) (*API, error) {
	if cfg.Commands == nil || cfg.Logger == nil {
		return nil, errors.New("admin: commands and logger are required")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("admin: token must be at least 16 characters")
	}
	a := &API{cfg: cfg, uploads: make(chan []byte, cmpOr(cfg.Uploads, DefaultUploads)), failures: newFailures()}
	for range cap(a.uploads) {
		a.uploads <- nil
	}
	return a, nil
}

// Handler returns the routes of the admin API.
func (a *API) Handler() http.Handler {
	r := httprouter.New()
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "Not found", nil)
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed", nil)
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		a.cfg.Logger.Error("admin handler panic", "path", req.URL.Path, "panic", v)
		writeError(w, http.StatusInternalServerError, "Internal server error", nil)
	}

	if a.cfg.Debug != nil {
		r.Handler(http.MethodGet, "/admin/debug/*path", a.cfg.Debug)
	}
	// Every route is counted under its pattern, when the configuration observes requests.
	handle := func(method, path string, h httprouter.Handle) { r.Handle(method, path, a.observed(method+" "+path, h)) }
	const est = "/admin/v1/establishments/:slug"
	handle(http.MethodGet, "/admin/v1/status", a.getStatus)
	handle(http.MethodGet, "/admin/v1/establishments", a.listEstablishments)
	handle(http.MethodPost, importPath, a.importBatch)
	handle(http.MethodGet, est, a.getEstablishment)
	handle(http.MethodPut, est, a.putEstablishment)
	handle(http.MethodPost, est+"/activate", a.activate)
	handle(http.MethodPost, est+"/api/enable", a.enableAPI)
	handle(http.MethodPost, est+"/api/disable", a.disableAPI)
	handle(http.MethodPost, est+"/api/regenerate-key", a.regenerateKey)
	handle(http.MethodPut, est+"/menu-redirect", a.setMenuRedirect)
	handle(http.MethodPut, est+"/master-menu", a.putMasterMenu)
	handle(http.MethodDelete, est+"/master-menu", a.deleteMasterMenu)
	handle(http.MethodPost, est+"/menu-types/:menu_type/versions/:version/assets", a.addAsset)
	handle(http.MethodPost, filesPath, a.uploadFile)
	handle(http.MethodPost, filesPath+"/collect", a.collectFiles)
	handle(http.MethodPut, est+"/menu-types/:menu_type/versions/:version", a.publishVersion)
	handle(http.MethodDelete, est+"/menu-types/:menu_type/versions/:version", a.withdrawVersion)
	handle(http.MethodPost, est+"/webhooks", a.registerWebhook)
	handle(http.MethodDelete, est+"/webhooks/:id", a.removeWebhook)
	if a.cfg.Deliveries != nil {
		handle(http.MethodGet, est+"/webhooks", a.listWebhooks)
		handle(http.MethodPost, est+"/webhooks/:id/rotate-secret", a.rotateSecret)
		handle(http.MethodPost, est+"/webhooks/:id/enable", a.enableWebhook)
		handle(http.MethodPost, est+"/webhooks/:id/ping", a.pingWebhook)
		handle(http.MethodGet, est+"/webhooks/:id/deliveries", a.listDeliveries)
		handle(http.MethodPost, "/admin/v1/deliveries/:id/redeliver", a.redeliver)
	}
	return a.authenticate(a.bounded(idempotency(r)))
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// DefaultMaxInFlight is how many admin requests are handled at once unless configured.
const DefaultMaxInFlight = 64

// bounded lets at most Config.MaxInFlight requests be handled at once; the others wait for a
// turn, or for their client to give up. Thousands of clients at once then cost their
// connections, not thousands of states decoded and encoded side by side.
func (a *API) bounded(next http.Handler) http.Handler {
	n := a.cfg.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}

// authenticate refuses every request without the bearer token. The scheme name is
// case-insensitive (RFC 9110, section 11.1); the token is compared in constant time. The right
// token is served at once, whatever its address sent before; a wrong or missing one is answered
// 401 after the penalty its address has earned (see failures).
func (a *API) authenticate(next http.Handler) http.Handler {
	want := []byte(a.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimLeft(token, " ")), want) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		d, done, busy := a.failures.fail(clientOf(r), time.Now())
		if busy {
			w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)))
			writeError(w, http.StatusTooManyRequests, "Too many requests", []string{"Authorization: wrong tokens from this address are waiting already"})
			return
		}
		waited := d <= 0 || events.Sleep(r.Context(), d) == nil
		done()
		if !waited {
			return // the client gave up: nobody reads the answer
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
		writeError(w, http.StatusUnauthorized, "Unauthorized", nil)
	})
}

func (a *API) getStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	out := map[string]any{"status": "ok"}
	if a.cfg.Status != nil {
		for k, v := range a.cfg.Status(r.Context()) {
			out[k] = v
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) listEstablishments(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	slugs, err := a.cfg.Commands.List(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if slugs == nil {
		slugs = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"establishments": slugs})
}

func (a *API) getEstablishment(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	st, err := a.cfg.Commands.Get(r.Context(), slug)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) putEstablishment(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	req, ok := request(w, r, ps)
	if !ok {
		return
	}
	var snap domain.EstablishmentInput
	if !decodeBody(w, r, &snap) {
		return
	}
	res, err := a.cfg.Commands.Import(r.Context(), req, snap)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	a.respond(w, r, status, res.Result, withKey(res))
}

// withKey is the answer to a command that may show an API key, once.
func withKey(res app.KeyResult) map[string]any {
	body := map[string]any{"result": res.Result}
	if res.APIKey != "" {
		body["api_key"] = res.APIKey
	}
	return body
}

func (a *API) activate(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.Activate(r.Context(), req)
		a.answer(w, r, res, err)
	}
}

func (a *API) disableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.DisableAPI(r.Context(), req)
		a.answer(w, r, res, err)
	}
}

func (a *API) enableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.EnableAPI(r.Context(), req)
		a.answerWithKey(w, r, res, err)
	}
}

func (a *API) regenerateKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.RegenerateKey(r.Context(), req)
		a.answerWithKey(w, r, res, err)
	}
}

func (a *API) setMenuRedirect(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	req, ok := request(w, r, ps)
	if !ok || !decodeBody(w, r, &in) {
		return
	}
	if in.Enabled == nil {
		a.fail(w, r, &domain.FieldError{Field: "enabled", Reason: "required"})
		return
	}
	res, err := a.cfg.Commands.SetMenuRedirect(r.Context(), req, *in.Enabled)
	a.answer(w, r, res, err)
}

func (a *API) publishVersion(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	typ, version, ok := versionPath(w, ps)
	if !ok {
		return
	}
	req, ok := request(w, r, ps)
	if !ok {
		return
	}
	var in domain.VersionInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.ID == "" {
		in.ID = string(version)
	}
	if in.ID != string(version) {
		a.fail(w, r, &domain.FieldError{Field: "id", Reason: fmt.Sprintf("%q does not match the path's version %q", in.ID, version)})
		return
	}
	res, err := a.cfg.Commands.PublishVersion(r.Context(), req, typ, in)
	a.answer(w, r, res, err)
}

func (a *API) withdrawVersion(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	typ, version, ok := versionPath(w, ps)
	if !ok {
		return
	}
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.WithdrawVersion(r.Context(), req, typ, version)
		a.answer(w, r, res, err)
	}
}

func (a *API) registerWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	req, ok := request(w, r, ps)
	if !ok {
		return
	}
	var in struct {
		URL string `json:"url"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	res, err := a.cfg.Commands.RegisterWebhook(r.Context(), req, in.URL)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := map[string]any{"result": res.Result}
	if !res.Duplicate {
		body["endpoint"] = res.Endpoint
	}
	a.respond(w, r, http.StatusCreated, res.Result, body)
}

func (a *API) removeWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.RemoveWebhook(r.Context(), req, ps.ByName("id"))
		a.answer(w, r, res, err)
	}
}

// answer writes the result of a command, or its error.
func (a *API) answer(w http.ResponseWriter, r *http.Request, res app.Result, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, http.StatusOK, res, map[string]any{"result": res})
}

// answerWithKey writes the result of a command that issues an API key, or its error.
func (a *API) answerWithKey(w http.ResponseWriter, r *http.Request, res app.KeyResult, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, http.StatusOK, res.Result, withKey(res))
}

// request reads the establishment of a command from the path and its command id from the
// request; on failure it has answered.
func request(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (app.Request, bool) {
	slug, ok := pathSlug(w, ps, "slug")
	return app.Request{Slug: slug, CommandID: commandID(r)}, ok
}

// DefaultWaitLimit bounds ?wait=true unless configured.
const DefaultWaitLimit = 10 * time.Second

// respond writes body, after waiting for the projection when the caller asked with ?wait=true:
// then the body says whether the change is served ("served"), and a change not served within
// Config.WaitLimit, or that this process cannot watch, is answered 202 Accepted, never a plain
// success.
func (a *API) respond(w http.ResponseWriter, r *http.Request, status int, res app.Result, body map[string]any) {
	if r.URL.Query().Get("wait") == "true" {
		served := res.Version == 0 // nothing to wait for: no establishment, or nothing appended
		if !served && a.cfg.Projection != nil {
			ctx, cancel := context.WithTimeout(r.Context(), cmp.Or(a.cfg.WaitLimit, DefaultWaitLimit))
			err := a.cfg.Projection.Served(ctx, res.Slug, res.Version)
			cancel()
			if served = err == nil; !served {
				a.cfg.Logger.Warn("wait for projection", "version", res.Version, "err", err)
			}
		}
		body["served"] = served
		if !served {
			status = http.StatusAccepted
		}
	}
	writeJSON(w, status, body)
}

// statuses maps each kind of refusal to its status and error text.
var statuses = map[app.Kind]struct {
	code int
	text string
}{
	app.KindInvalid:             {http.StatusUnprocessableEntity, "Unprocessable entity"},
	app.KindNotFound:            {http.StatusNotFound, "Not found"},
	app.KindConflict:            {http.StatusConflict, "Conflict"},
	app.KindTooLarge:            {http.StatusRequestEntityTooLarge, "Content too large"},
	app.KindUnsupported:         {http.StatusUnsupportedMediaType, "Unsupported media type"},
	app.KindUnavailable:         {http.StatusServiceUnavailable, "Service unavailable"},
	app.KindDeclined:            {http.StatusServiceUnavailable, "Service unavailable"},
	app.KindInsufficientStorage: {http.StatusInsufficientStorage, "Insufficient storage"},
	app.KindInternal:            {http.StatusInternalServerError, "Internal server error"},
}

// fail answers err with the status of its kind and the spec's error body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, text, details := a.refusal(r, err)
	writeError(w, status, text, details)
}

// refusal returns the status of err's kind, its error text and its details: the bad fields
// named for invalid input (within the bounds of fieldDetails), the refusal's text otherwise,
// nothing of a fault of this service's own (which is logged).
func (a *API) refusal(r *http.Request, err error) (status int, text string, details []string) {
	kind := app.KindOf(err)
	st := statuses[kind]
	switch fields := fieldDetails(err); {
	case fields != nil:
		details = fields
	case kind == app.KindInternal:
		a.cfg.Logger.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case kind == app.KindUnavailable:
		// The cause is this service's own (the event log, a store): say what, not how.
		a.cfg.Logger.Warn("admin request not served", "method", r.Method, "path", r.URL.Path, "err", err)
		details = []string{app.ErrUnavailable.Error()}
	default:
		details = []string{err.Error()}
	}
	return st.code, st.text, details
}

// decodeBody reads a JSON body strictly; on failure it has answered 400, 413 or 415.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "Unsupported media type", []string{"Content-Type: want application/json"})
			return false
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err == nil {
		err = decodeDocument(data, v)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || strings.Contains(err.Error(), "http: request body too large") {
			writeError(w, http.StatusRequestEntityTooLarge, "Request body too large", []string{fmt.Sprintf("body: at most %d bytes", MaxBodyBytes)})
			return false
		}
		details := fieldDetails(err)
		if details == nil {
			details = []string{err.Error()}
		}
		writeError(w, http.StatusBadRequest, "Bad request", details)
		return false
	}
	return true
}

// versionPath validates the menu type and version of a version's path; on failure it has
// answered 422 naming the bad one.
func versionPath(w http.ResponseWriter, ps httprouter.Params) (typ, version domain.Slug, ok bool) {
	if typ, ok = pathSlug(w, ps, "menu_type"); ok {
		version, ok = pathSlug(w, ps, "version")
	}
	return typ, version, ok
}

// pathSlug validates a slug path parameter; on failure it has answered 422 naming it.
func pathSlug(w http.ResponseWriter, ps httprouter.Params, name string) (domain.Slug, bool) {
	s, err := domain.ParseSlug(ps.ByName(name))
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{name + ": " + err.Error()})
		return "", false
	}
	return s, true
}

// maxIdempotencyKey bounds the length of an Idempotency-Key.
const maxIdempotencyKey = 255

// commandIDKey is the request context key of the command id derived from an Idempotency-Key.
type commandIDKey struct{}

// commandID is the command id idempotency derived from the request's Idempotency-Key, or "" for
// a request without one (the command then gets a random id).
func commandID(r *http.Request) string {
	id, _ := r.Context().Value(commandIDKey{}).(string)
	return id
}

// idempotency turns the Idempotency-Key of a write into its command id: the key is scoped to
// the method and path it was sent with (so the same key on another establishment or another
// operation is another command), followed by a digest of the body (so the service can tell a
// retry from the key's reuse for a different request). A malformed key is a 400, never ignored.
func idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if err := checkIdempotencyKey(keys); err != nil {
			writeError(w, http.StatusBadRequest, "Bad request", []string{"Idempotency-Key: " + err.Error()})
			return
		}
		if isUpload(r) {
			// An upload is read file by file, and its key names the files it sends.
			scope := r.Method + "\x00" + r.URL.Path + "\x00" + keys[0]
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), uploadScopeKey{}, scope)))
			return
		}
		if r.URL.Path == importPath {
			// A batch is read line by line, and its key names each line's command.
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, "Request body too large", []string{fmt.Sprintf("body: at most %d bytes", MaxBodyBytes)})
				return
			}
			writeError(w, http.StatusBadRequest, "Bad request", []string{"body: " + err.Error()})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		id := app.KeyedCommandID(r.Method+"\x00"+r.URL.Path+"\x00"+keys[0], body)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), commandIDKey{}, id)))
	})
}

// checkIdempotencyKey accepts one key of 1 to 255 visible ASCII characters.
func checkIdempotencyKey(keys []string) error {
	if len(keys) > 1 {
		return errors.New("sent more than once")
	}
	k := keys[0]
	if k == "" || len(k) > maxIdempotencyKey {
		return fmt.Errorf("want 1 to %d characters, got %d", maxIdempotencyKey, len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return errors.New("want visible ASCII characters only")
		}
	}
	return nil
}

type errorBody struct {
	Error   string   `json:"error"`
	Details []string `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string, details []string) {
	writeJSON(w, status, errorBody{Error: msg, Details: details})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// observed returns h, telling Observe the status of each of its answers under route.
func (a *API) observed(route string, h httprouter.Handle) httprouter.Handle {
	observe := a.cfg.Observe
	if observe == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r, ps)
		observe(route, sw.statusCode())
	}
}

// statusWriter records the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
