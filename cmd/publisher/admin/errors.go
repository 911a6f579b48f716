package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// reply is how a refusal of one kind is answered: its status, its error text, and what its
// details say when it names no field.
type reply struct {
	status  int
	text    string
	details func(log *slog.Logger, r *http.Request, err error) []string
}

// statuses is the one table from kinds of refusal to replies: every error a handler meets is
// answered through it (see refusal), and a new kind is a new row.
var statuses = map[app.Kind]reply{
	app.KindMalformed:           {http.StatusBadRequest, "Bad request", itsText},
	app.KindInvalid:             {http.StatusUnprocessableEntity, "Unprocessable entity", itsText},
	app.KindNotFound:            {http.StatusNotFound, "Not found", itsText},
	app.KindConflict:            {http.StatusConflict, "Conflict", itsText},
	app.KindTimeout:             {http.StatusRequestTimeout, "Request timeout", itsText},
	app.KindTooLarge:            {http.StatusRequestEntityTooLarge, "Content too large", itsText},
	app.KindBodyTooLarge:        {http.StatusRequestEntityTooLarge, "Request body too large", itsText},
	app.KindUnsupported:         {http.StatusUnsupportedMediaType, "Unsupported media type", itsText},
	app.KindDeclined:            {http.StatusServiceUnavailable, "Service unavailable", itsText},
	app.KindGone:                {http.StatusGone, "Gone", itsText},
	app.KindForbidden:           {http.StatusForbidden, "Forbidden", itsText},
	app.KindUnavailable:         {http.StatusServiceUnavailable, "Service unavailable", anOutage},
	app.KindInsufficientStorage: {http.StatusInsufficientStorage, "Insufficient storage", itsText},
	app.KindInternal:            {http.StatusInternalServerError, "Internal server error", aFault},
}

// itsText says what the refusal says: the client can act on it.
func itsText(_ *slog.Logger, _ *http.Request, err error) []string { return []string{err.Error()} }

// anOutage says what failed, not how: the cause is this service's own (the event log, a store),
// and is logged.
func anOutage(log *slog.Logger, r *http.Request, err error) []string {
	log.Warn("admin request not served", "method", r.Method, "path", r.URL.Path, "err", err)
	return []string{app.ErrUnavailable.Error()}
}

// aFault says nothing of a fault of this service's own, which is logged.
func aFault(log *slog.Logger, r *http.Request, err error) []string {
	log.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return nil
}

// fail answers err with the status of its kind and the spec's error body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, text, details := a.refusal(r, err)
	writeError(w, status, text, details)
}

// refusal returns the answer to err, by its kind: the status, the error text and the details,
// which name the bad fields when err holds field errors (within the bounds of fieldDetails), and
// say what the kind's row says otherwise.
func (a *API) refusal(r *http.Request, err error) (status int, text string, details []string) {
	rep := statuses[app.KindOf(err)]
	if details = fieldDetails(err); details == nil {
		details = rep.details(a.cfg.Logger, r, err)
	}
	return rep.status, rep.text, details
}

// Refusals of a request before any command, each with its kind.
var (
	errWantJSON     = &app.Refusal{Kind: app.KindUnsupported, Err: errors.New("Content-Type: want application/json")}
	errBodyTooLarge = &app.Refusal{Kind: app.KindBodyTooLarge, Err: fmt.Errorf("body: at most %d bytes", MaxBodyBytes)}
)

// malformed is err as the refusal of a request that cannot be read.
func malformed(err error) error { return &app.Refusal{Kind: app.KindMalformed, Err: err} }

// invalid is err as the refusal of a value of a request that names no field of a document: a path
// value, a query parameter.
func invalid(err error) error { return &app.Refusal{Kind: app.KindInvalid, Err: err} }

// bodyError is the refusal of a body that could not be read whole or decoded: too large, or
// malformed.
func bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errBodyTooLarge
	}
	return malformed(err)
}

type errorBody struct {
	Error   string   `json:"error"`
	Details []string `json:"details,omitempty"`
}

// writeError writes an error answer. Refusals go through fail; only the answers of the router and
// of authentication, which are no refusal of a request's content, are written here directly.
func writeError(w http.ResponseWriter, status int, msg string, details []string) {
	writeJSON(w, status, errorBody{Error: msg, Details: details})
}
