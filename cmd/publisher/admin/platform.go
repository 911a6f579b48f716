package admin

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// The routes of the platform's webhook endpoints, which receive the changes of every
// establishment, or of a list, in batches.

func (a *API) registerPlatformWebhook(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in struct {
		URL            string   `json:"url"`
		Establishments []string `json:"establishments"`
	}
	if !a.decode(w, r, &in) {
		return
	}
	ep, secret, err := a.cfg.Platform.Register(r.Context(), in.URL, in.Establishments)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"endpoint": ep, "secret": secret})
}

func (a *API) listPlatformWebhooks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	eps, err := a.cfg.Platform.Endpoints(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoints": eps})
}

func (a *API) getPlatformWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	ep, err := a.cfg.Platform.Endpoint(r.Context(), ps.ByName("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoint": ep})
}

func (a *API) removePlatformWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("id")
	if err := a.cfg.Platform.Remove(r.Context(), id); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "removed": true})
}

func (a *API) rotatePlatformSecret(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	grace, ok := a.grace(w, r)
	if !ok {
		return
	}
	secret, err := a.cfg.Platform.RotateSecret(r.Context(), ps.ByName("id"), grace)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ps.ByName("id"), "secret": secret, "previous_secret_signs_for": grace.String()})
}

func (a *API) enablePlatformWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	ep, err := a.cfg.Platform.Enable(r.Context(), ps.ByName("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoint": ep})
}

func (a *API) pingPlatformWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	at, err := a.cfg.Platform.Ping(r.Context(), ps.ByName("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"attempt": at})
}

func (a *API) listPlatformDeliveries(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	log, err := a.cfg.Platform.Log(r.Context(), ps.ByName("id"), deliveryLimit(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": log})
}
