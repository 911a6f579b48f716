package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook"
)

// MaxBodyBytes bounds an admin request body.
const MaxBodyBytes = 4 << 20

// webhookRegistry keeps webhook endpoints with their signing secrets, outside the event log.
type webhookRegistry interface {
	Register(ctx context.Context, establishment, id, url, secret string) error
	Remove(ctx context.Context, establishment, id string) error
}

// webhookOperations are the operator's views and actions on deliveries. Optional: without them
// the routes that need them answer 404.
type webhookOperations interface {
	Endpoints(ctx context.Context, establishment string) ([]webhook.Endpoint, error)
	Endpoint(ctx context.Context, establishment, id string) (webhook.Endpoint, error)
	RotateSecret(ctx context.Context, establishment, id, newSecret string, grace time.Duration) error
	Enable(ctx context.Context, establishment, id string) error
	Ping(ctx context.Context, establishment, id string) (webhook.Attempt, error)
	DeliveryLog(ctx context.Context, endpointID string, limit int) ([]webhook.Delivery, error)
	Redeliver(ctx context.Context, deliveryID string) error
}

// projection lets a write wait until its events are served, when the caller asks for it.
type projection interface {
	// Served returns once the record at sequence seq of establishment slug is served.
	Served(ctx context.Context, slug domain.Slug, seq uint64) error
}

// Config wires an admin API.
type Config struct {
	Service  *Service
	Token    string // bearer token every request must carry
	Webhooks webhookRegistry
	// WebhookOps is optional; it serves the endpoint, delivery log, ping and redelivery routes.
	WebhookOps webhookOperations
	// Projection is optional; with it, ?wait=true on a write answers once the change is served.
	Projection projection
	Logger     *slog.Logger
	// Status is optional extra status reported by GET /admin/v1/status.
	Status func(ctx context.Context) map[string]any
}

// API is the admin HTTP API: the back office's way to change content.
type API struct {
	cfg Config
}

// NewAPI validates cfg and returns the API.
func NewAPI(cfg Config) (*API, error) {
	if cfg.Service == nil || cfg.Logger == nil || cfg.Webhooks == nil {
		return nil, errors.New("admin: service, webhook registry and logger are required")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("admin: token must be at least 16 characters")
	}
	return &API{cfg: cfg}, nil
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

	const est = "/admin/v1/establishments/:slug"
	r.GET("/admin/v1/status", a.getStatus)
	r.GET("/admin/v1/establishments", a.listEstablishments)
	r.GET(est, a.getEstablishment)
	r.PUT(est, a.putEstablishment)
	r.POST(est+"/activate", a.activate)
	r.POST(est+"/api/enable", a.enableAPI)
	r.POST(est+"/api/disable", a.disableAPI)
	r.POST(est+"/api/regenerate-key", a.regenerateKey)
	r.PUT(est+"/menu-redirect", a.setMenuRedirect)
	r.PUT(est+"/menu-types/:menu_type/versions/:version", a.publishVersion)
	r.DELETE(est+"/menu-types/:menu_type/versions/:version", a.withdrawVersion)
	r.POST(est+"/webhooks", a.registerWebhook)
	r.DELETE(est+"/webhooks/:id", a.removeWebhook)
	if a.cfg.WebhookOps != nil {
		r.GET(est+"/webhooks", a.listWebhooks)
		r.POST(est+"/webhooks/:id/rotate-secret", a.rotateSecret)
		r.POST(est+"/webhooks/:id/enable", a.enableWebhook)
		r.POST(est+"/webhooks/:id/ping", a.pingWebhook)
		r.GET(est+"/webhooks/:id/deliveries", a.listDeliveries)
		r.POST("/admin/v1/deliveries/:id/redeliver", a.redeliver)
	}
	return a.authenticate(idempotency(r))
}

// authenticate refuses every request without the bearer token. The scheme name is
// case-insensitive (RFC 9110, section 11.1); the token is compared in constant time.
func (a *API) authenticate(next http.Handler) http.Handler {
	want := []byte(a.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimLeft(token, " ")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
			writeError(w, http.StatusUnauthorized, "Unauthorized", nil)
			return
		}
		next.ServeHTTP(w, r)
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
	slugs, err := a.cfg.Service.List(r.Context())
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
	st, err := a.cfg.Service.Get(r.Context(), slug)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) putEstablishment(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	var snap domain.Snapshot
	if !decodeBody(w, r, &snap) {
		return
	}
	if snap.Slug == "" {
		snap.Slug = string(slug)
	}
	var key domain.APIKey
	res, err := a.cfg.Service.Execute(r.Context(), slug, commandID(r), func(e *domain.Establishment) ([]domain.Event, error) {
		out, err := e.Import(snap, NewAPIKey())
		key = out.APIKey
		return out.Events, err
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := map[string]any{"result": res}
	if key != "" && !res.Duplicate {
		body["api_key"] = key
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	a.respond(w, r, status, res, body)
}

func (a *API) activate(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	a.simple(w, r, ps, func(e *domain.Establishment) ([]domain.Event, error) { return e.Activate() })
}

func (a *API) disableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	a.simple(w, r, ps, func(e *domain.Establishment) ([]domain.Event, error) { return e.DisableAPI() })
}

func (a *API) enableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	key := NewAPIKey()
	a.withKey(w, r, ps, key, func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(key) })
}

func (a *API) regenerateKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	key := NewAPIKey()
	a.withKey(w, r, ps, key, func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(key) })
}

// withKey runs a command that installs key and shows the key once.
func (a *API) withKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key domain.APIKey, d decision) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	res, err := a.cfg.Service.Execute(r.Context(), slug, commandID(r), d)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := map[string]any{"result": res}
	if !res.Duplicate {
		body["api_key"] = key
	}
	a.respond(w, r, http.StatusOK, res, body)
}

func (a *API) setMenuRedirect(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if _, ok := pathSlug(w, ps, "slug"); !ok {
		return
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Enabled == nil {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{"enabled: required"})
		return
	}
	a.simple(w, r, ps, func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(*in.Enabled) })
}

func (a *API) publishVersion(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	typ, ok := pathSlug(w, ps, "menu_type")
	if !ok {
		return
	}
	version, ok := pathSlug(w, ps, "version")
	if !ok {
		return
	}
	if _, ok := pathSlug(w, ps, "slug"); !ok {
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
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{fmt.Sprintf("id: %q does not match the path's version %q", in.ID, version)})
		return
	}
	a.simple(w, r, ps, func(e *domain.Establishment) ([]domain.Event, error) { return e.PublishMenuVersion(typ, in) })
}

func (a *API) withdrawVersion(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	typ, ok := pathSlug(w, ps, "menu_type")
	if !ok {
		return
	}
	version, ok := pathSlug(w, ps, "version")
	if !ok {
		return
	}
	a.simple(w, r, ps, func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion(typ, version) })
}

func (a *API) registerWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	var in struct {
		URL string `json:"url"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if err := domain.ValidateHTTPSURL(in.URL); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{"url: " + err.Error()})
		return
	}
	id := NewID("wh")
	secret := NewWebhookSecret()
	// The endpoint and its secret are stored before the endpoint exists in the log, so no delivery
	// ever lacks its secret; a failed append removes them again.
	if err := a.cfg.Webhooks.Register(r.Context(), string(slug), id, in.URL, secret); err != nil {
		a.fail(w, r, err)
		return
	}
	res, err := a.cfg.Service.Execute(r.Context(), slug, commandID(r), func(e *domain.Establishment) ([]domain.Event, error) {
		return e.RegisterWebhook(id, in.URL)
	})
	if err != nil || res.Duplicate {
		if derr := a.cfg.Webhooks.Remove(context.WithoutCancel(r.Context()), string(slug), id); derr != nil {
			a.cfg.Logger.Error("remove unregistered webhook endpoint", "id", id, "err", derr)
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := map[string]any{"result": res}
	if !res.Duplicate {
		body["endpoint"] = map[string]string{"id": id, "url": in.URL, "secret": secret}
	}
	a.respond(w, r, http.StatusCreated, res, body)
}

func (a *API) removeWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	id := ps.ByName("id")
	res, err := a.cfg.Service.Execute(r.Context(), slug, commandID(r), func(e *domain.Establishment) ([]domain.Event, error) {
		return e.RemoveWebhook(id)
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// The log says the endpoint is gone; stop deliveries to it.
	if err := a.cfg.Webhooks.Remove(r.Context(), string(slug), id); err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, http.StatusOK, res, map[string]any{"result": res})
}

// simple runs a command whose answer is its result only.
func (a *API) simple(w http.ResponseWriter, r *http.Request, ps httprouter.Params, d decision) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	res, err := a.cfg.Service.Execute(r.Context(), slug, commandID(r), d)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, http.StatusOK, res, map[string]any{"result": res})
}

// respond writes body, after waiting for the projection when the caller asked with ?wait=true.
func (a *API) respond(w http.ResponseWriter, r *http.Request, status int, res Result, body any) {
	if a.cfg.Projection != nil && r.URL.Query().Get("wait") == "true" && res.Version > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := a.cfg.Projection.Served(ctx, res.Slug, res.Version); err != nil {
			a.cfg.Logger.Warn("wait for projection", "version", res.Version, "err", err)
		}
	}
	writeJSON(w, status, body)
}

// fail maps an error to its status and the spec's error body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	if fes := domain.FieldErrors(err); len(fes) > 0 {
		details := make([]string, len(fes))
		for i, fe := range fes {
			details[i] = fe.Error()
		}
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", details)
		return
	}
	switch {
	case errors.Is(err, webhook.ErrInvalidEndpoint), errors.Is(err, webhook.ErrRefusedAddress), errors.Is(err, webhook.ErrInvalidSecret):
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{"url: " + err.Error()})
	case errors.Is(err, webhook.ErrResolverUnavailable):
		writeError(w, http.StatusServiceUnavailable, "Service unavailable", []string{err.Error()})
	case errors.Is(err, webhook.ErrEndpointNotFound), errors.Is(err, webhook.ErrDeliveryNotFound):
		writeError(w, http.StatusNotFound, "Not found", []string{err.Error()})
	case errors.Is(err, webhook.ErrDeliveryInProgress), errors.Is(err, webhook.ErrEndpointDisabled):
		writeError(w, http.StatusConflict, "Conflict", []string{err.Error()})
	case errors.Is(err, domain.ErrNotFound), errors.Is(err, domain.ErrMenuTypeNotFound),
		errors.Is(err, domain.ErrMenuVersionNotFound), errors.Is(err, domain.ErrWebhookNotFound):
		writeError(w, http.StatusNotFound, "Not found", []string{err.Error()})
	case errors.Is(err, ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "Content too large", []string{"body: " + err.Error()})
	case errors.Is(err, ErrIdempotencyKeyReused):
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{"Idempotency-Key: " + err.Error()})
	case errors.Is(err, domain.ErrInvalidTransition), errors.Is(err, domain.ErrAPIDisabled), errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, "Conflict", []string{err.Error()})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "Service unavailable", []string{"the event log did not answer in time"})
	default:
		a.cfg.Logger.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal server error", nil)
	}
}

// decodeBody reads a JSON body strictly; on failure it has answered 400, 413 or 415.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "Unsupported media type", []string{"Content-Type: want application/json"})
			return false
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := domain.DecodeStrict(r.Body, v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || strings.Contains(err.Error(), "http: request body too large") {
			writeError(w, http.StatusRequestEntityTooLarge, "Request body too large", []string{fmt.Sprintf("body: at most %d bytes", MaxBodyBytes)})
			return false
		}
		var details []string
		for _, fe := range domain.FieldErrors(err) {
			details = append(details, fe.Error())
		}
		if details == nil {
			details = []string{err.Error()}
		}
		writeError(w, http.StatusBadRequest, "Bad request", details)
		return false
	}
	return true
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
		scope := sha256.Sum256([]byte(r.Method + "\x00" + r.URL.Path + "\x00" + keys[0]))
		digest := sha256.Sum256(body)
		id := idempotentPrefix + hex.EncodeToString(scope[:16]) + "." + hex.EncodeToString(digest[:8])
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
