package admin

import (
	"net/http"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

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

type errorBody struct {
	Error   string   `json:"error"`
	Details []string `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string, details []string) {
	writeJSON(w, status, errorBody{Error: msg, Details: details})
}
