package admin

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/tokens"
)

// tokensPath is the path of the scoped tokens.
const tokensPath = "/admin/v1/tokens"

// tokenRoutes are the operations on the scoped tokens: the admin token's alone.
func (a *API) tokenRoutes() []route {
	const one = tokensPath + "/:id"
	return []route{
		{http.MethodPost, tokensPath, adminOnly, a.createToken},
		{http.MethodGet, tokensPath, adminOnly, a.listTokens},
		{http.MethodGet, one, adminOnly, a.getToken},
		{http.MethodDelete, one, adminOnly, a.revokeToken},
	}
}

// createToken answers 201 with the new token and, this once, its secret; a retry under the same
// Idempotency-Key 200 with the token, without its secret.
func (a *API) createToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var req tokens.Request
	if !a.decode(w, r, &req) {
		return
	}
	t, err := a.cfg.Tokens.Create(r.Context(), req, commandID(r))
	switch {
	case err != nil:
		a.fail(w, r, err)
	case t.Duplicate:
		writeJSON(w, http.StatusOK, t)
	default:
		a.cfg.Logger.Info("admin token created", "token", t.ID, "scope", t.Scope, "by", credentialOf(r).ID)
		writeJSON(w, http.StatusCreated, t)
	}
}

func (a *API) listTokens(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	list, err := a.cfg.Tokens.List(r.Context())
	a.answerValue(w, r, http.StatusOK, map[string]any{"tokens": list}, err)
}

func (a *API) getToken(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	t, err := a.cfg.Tokens.Get(r.Context(), ps.ByName("id"))
	a.answerValue(w, r, http.StatusOK, t, err)
}

// revokeToken answers 204: the token is refused from now on.
func (a *API) revokeToken(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("id")
	if err := a.cfg.Tokens.Revoke(r.Context(), id); err != nil {
		a.fail(w, r, err)
		return
	}
	a.cfg.Logger.Info("admin token revoked", "token", id, "by", credentialOf(r).ID)
	w.WriteHeader(http.StatusNoContent)
}
