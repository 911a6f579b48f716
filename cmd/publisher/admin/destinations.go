package admin

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// destinationsPath is the path of the broker destinations.
const destinationsPath = "/admin/v1/destinations"

// Destinations registers and operates the broker destinations of the change events. Create reads
// a registration body; the answers are JSON values; errors carry their kinds (app.Refusal).
type Destinations interface {
	Create(ctx context.Context, body []byte) (any, error)
	List(ctx context.Context) (any, error)
	Get(ctx context.Context, id string) (any, error)
	Remove(ctx context.Context, id string) error
	Pause(ctx context.Context, id string, paused bool) (any, error)
}

func (a *API) destinationRoutes() []route {
	const one = destinationsPath + "/:id"
	return []route{
		{http.MethodPost, destinationsPath, platformAll, a.createDestination},
		{http.MethodGet, destinationsPath, reads, a.listDestinations},
		{http.MethodGet, one, reads, a.getDestination},
		{http.MethodDelete, one, platformAll, a.removeDestination},
		{http.MethodPost, one + "/pause", platformAll, a.pauseDestination(true)},
		{http.MethodPost, one + "/resume", platformAll, a.pauseDestination(false)},
	}
}

func (a *API) createDestination(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var body json.RawMessage
	if !a.decode(w, r, &body) {
		return
	}
	st, err := a.cfg.Destinations.Create(r.Context(), body)
	a.answerValue(w, r, http.StatusCreated, st, err)
}

func (a *API) listDestinations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	list, err := a.cfg.Destinations.List(r.Context())
	a.answerValue(w, r, http.StatusOK, list, err)
}

func (a *API) getDestination(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	st, err := a.cfg.Destinations.Get(r.Context(), ps.ByName("id"))
	a.answerValue(w, r, http.StatusOK, st, err)
}

func (a *API) removeDestination(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := a.cfg.Destinations.Remove(r.Context(), ps.ByName("id")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) pauseDestination(paused bool) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		st, err := a.cfg.Destinations.Pause(r.Context(), ps.ByName("id"), paused)
		a.answerValue(w, r, http.StatusOK, st, err)
	}
}
