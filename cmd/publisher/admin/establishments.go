package admin

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

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
	slug, ok := a.pathSlug(w, r, ps, "slug")
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
	req, ok := a.request(w, r, ps)
	if !ok {
		return
	}
	var snap domain.EstablishmentInput
	if !a.decode(w, r, &snap) {
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
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.Activate(r.Context(), req)
		a.answer(w, r, res, err)
	}
}

func (a *API) disableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.DisableAPI(r.Context(), req)
		a.answer(w, r, res, err)
	}
}

func (a *API) enableAPI(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.EnableAPI(r.Context(), req)
		a.answerWithKey(w, r, res, err)
	}
}

func (a *API) regenerateKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.RegenerateKey(r.Context(), req)
		a.answerWithKey(w, r, res, err)
	}
}

func (a *API) setMenuRedirect(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	req, ok := a.request(w, r, ps)
	if !ok || !a.decode(w, r, &in) {
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
	typ, version, ok := a.versionPath(w, r, ps)
	if !ok {
		return
	}
	req, ok := a.request(w, r, ps)
	if !ok {
		return
	}
	var in domain.VersionInput
	if !a.decode(w, r, &in) {
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
	typ, version, ok := a.versionPath(w, r, ps)
	if !ok {
		return
	}
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.WithdrawVersion(r.Context(), req, typ, version)
		a.answer(w, r, res, err)
	}
}
