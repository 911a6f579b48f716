package admin

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
)

// Handler returns the admin API: its routes behind its middleware.
func (a *API) Handler() http.Handler { return a.routes() }

// route is one operation of the admin API: its method, its path pattern and its handler.
type route struct {
	method, path string
	handle       httprouter.Handle
}

// surface is the whole admin API, each route as its description names it: the routes of the
// description itself, which need no token (see public), then those of the API.
func (a *API) surface() []route {
	const est = "/admin/v1/establishments/:slug"
	routes := []route{
		{http.MethodGet, openapi.JSONPath, document(openapi.JSON(), openapi.JSONContentType)},
		{http.MethodGet, openapi.YAMLPath, document(openapi.YAML(), openapi.YAMLContentType)},
		{http.MethodGet, openapi.ImportSchemaPath, document(openapi.ImportSchema(), openapi.ImportSchemaMediaType)},
		{http.MethodGet, "/admin/v1/status", a.getStatus},
		{http.MethodGet, "/admin/v1/establishments", a.listEstablishments},
		{http.MethodPost, importPath, a.importBatch},
		{http.MethodGet, est, a.getEstablishment},
		{http.MethodPut, est, a.putEstablishment},
		{http.MethodPost, est + "/activate", a.activate},
		{http.MethodPost, est + "/api/enable", a.enableAPI},
		{http.MethodPost, est + "/api/disable", a.disableAPI},
		{http.MethodPost, est + "/api/regenerate-key", a.regenerateKey},
		{http.MethodPut, est + "/menu-redirect", a.setMenuRedirect},
		{http.MethodPut, est + "/master-menu", a.putMasterMenu},
		{http.MethodDelete, est + "/master-menu", a.deleteMasterMenu},
		{http.MethodPost, est + "/menu-types/:menu_type/versions/:version/assets", a.addAsset},
		{http.MethodPost, filesPath, a.uploadFile},
		{http.MethodPost, filesPath + "/collect", a.collectFiles},
		{http.MethodPut, est + "/menu-types/:menu_type/versions/:version", a.publishVersion},
		{http.MethodDelete, est + "/menu-types/:menu_type/versions/:version", a.withdrawVersion},
		{http.MethodPost, est + "/webhooks", a.registerWebhook},
		{http.MethodDelete, est + "/webhooks/:id", a.removeWebhook},
	}
	if a.cfg.Deliveries != nil {
		routes = append(routes,
			route{http.MethodGet, est + "/webhooks", a.listWebhooks},
			route{http.MethodPost, est + "/webhooks/:id/rotate-secret", a.rotateSecret},
			route{http.MethodPost, est + "/webhooks/:id/enable", a.enableWebhook},
			route{http.MethodPost, est + "/webhooks/:id/ping", a.pingWebhook},
			route{http.MethodGet, est + "/webhooks/:id/deliveries", a.listDeliveries},
			route{http.MethodPost, "/admin/v1/deliveries/:id/redeliver", a.redeliver},
		)
	}
	if a.cfg.Platform != nil {
		const hook = "/admin/v1/webhooks/:id"
		routes = append(routes,
			route{http.MethodPost, "/admin/v1/webhooks", a.registerPlatformWebhook},
			route{http.MethodGet, "/admin/v1/webhooks", a.listPlatformWebhooks},
			route{http.MethodGet, hook, a.getPlatformWebhook},
			route{http.MethodDelete, hook, a.removePlatformWebhook},
			route{http.MethodPost, hook + "/rotate-secret", a.rotatePlatformSecret},
			route{http.MethodPost, hook + "/enable", a.enablePlatformWebhook},
			route{http.MethodPost, hook + "/ping", a.pingPlatformWebhook},
			route{http.MethodGet, hook + "/deliveries", a.listPlatformDeliveries},
		)
	}
	if a.cfg.Changes != nil {
		routes = append(routes, route{http.MethodGet, changesPath, a.listChanges})
	}
	if a.cfg.Destinations != nil {
		routes = append(routes, a.destinationRoutes()...)
	}
	if a.cfg.Debug != nil {
		debug := a.cfg.Debug
		routes = append(routes, route{http.MethodGet, "/admin/debug/*path", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			debug.ServeHTTP(w, r)
		}})
	}
	return routes
}

// routes is the admin API behind its middleware, in the order a request meets it: the token, the
// bound on requests in flight, the Idempotency-Key, then the route.
func (a *API) routes() http.Handler {
	r := a.router()
	for _, rt := range a.surface() {
		// Every route is counted under its pattern, when the configuration observes requests.
		r.Handle(rt.method, rt.path, a.observed(rt.method+" "+rt.path, rt.handle))
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
