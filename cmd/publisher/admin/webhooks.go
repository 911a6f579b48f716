package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

func (a *API) registerWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	req, ok := a.request(w, r, ps)
	if !ok {
		return
	}
	var in struct {
		URL string `json:"url"`
	}
	if !a.decode(w, r, &in) {
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
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.RemoveWebhook(r.Context(), req, ps.ByName("id"))
		a.answer(w, r, res, err)
	}
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	eps, err := a.cfg.Deliveries.Endpoints(r.Context(), slug)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoints": eps})
}

// rotateSecret issues a new signing secret; the previous one keeps signing for the grace period
// (default 24h), so receivers can switch without missing a delivery.
func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	grace, ok := a.grace(w, r)
	if !ok {
		return
	}
	secret, err := a.cfg.Commands.RotateWebhookSecret(r.Context(), slug, ps.ByName("id"), grace)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ps.ByName("id"), "secret": secret, "previous_secret_signs_for": grace.String()})
}

func (a *API) enableWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	ep, err := a.cfg.Deliveries.Enable(r.Context(), slug, ps.ByName("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoint": ep})
}

// pingWebhook sends a test delivery now and answers with its attempt; a receiver that fails is
// reported in the attempt, not as an error of this request.
func (a *API) pingWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	at, err := a.cfg.Deliveries.Ping(r.Context(), slug, ps.ByName("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"attempt": at})
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	log, err := a.cfg.Deliveries.Log(r.Context(), slug, ps.ByName("id"), deliveryLimit(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": log})
}

func (a *API) redeliver(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("id")
	if err := a.cfg.Deliveries.Redeliver(r.Context(), id); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"delivery": id, "status": "queued"})
}

// grace reads the grace period of a secret rotation from the optional body {"grace": "24h"}:
// 24 hours unless given, at most app.MaxRotationGrace.
func (a *API) grace(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	var in struct {
		Grace string `json:"grace"`
	}
	if r.ContentLength != 0 && !a.decode(w, r, &in) {
		return 0, false
	}
	if in.Grace == "" {
		return 24 * time.Hour, true
	}
	d, err := time.ParseDuration(in.Grace)
	if err != nil || d < 0 || d > app.MaxRotationGrace {
		a.fail(w, r, &domain.FieldError{Field: "grace", Reason: "want a duration from 0s to 720h, such as 24h"})
		return 0, false
	}
	return d, true
}

// deliveryLimit reads ?limit= of a delivery log: app.DefaultDeliveryLog unless given; a value
// that is not a number is 0, which the log refuses as out of range.
func deliveryLimit(r *http.Request) int {
	limit := app.DefaultDeliveryLog
	if v := r.URL.Query().Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	return limit
}
