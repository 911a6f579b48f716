package admin

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Handler returns the admin API: its routes behind its middleware.
func (a *API) Handler() http.Handler { return a.routes() }

// routes is the whole surface of the admin API, and its middleware in the order a request meets
// it: the token, the bound on requests in flight, the Idempotency-Key, then the route.
func (a *API) routes() http.Handler {
	r := a.router()
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
	return a.authenticate(a.bounded(a.idempotency(r)))
}

// router returns a router that answers what no route does: an unknown path 404, a known path
// with another method 405, a panic 500 (logged). It never redirects: a client names the resource
// it means.
func (a *API) router() *httprouter.Router {
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
	return r
}
