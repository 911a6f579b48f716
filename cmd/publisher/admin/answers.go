package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

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
			ctx, cancel := context.WithTimeout(r.Context(), a.cfg.WaitLimit)
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

// answerValue writes v with status, or the refusal err when it is one.
func (a *API) answerValue(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
