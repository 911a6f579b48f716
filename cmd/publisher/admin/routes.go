package admin

import (
	"net/http"
	"strings"

	"github.com/felixge/httpsnoop"
	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
)

// Handler returns the admin API: its routes behind its middleware.
func (a *API) Handler() http.Handler { return a.routes() }

// route is one operation of the admin API: its method, its path pattern, the credentials it
// serves and its handler.
type route struct {
	method, path string
	access       access
	handle       httprouter.Handle
}

// surface is the whole admin API, each route as its description names it: the routes of the
// description itself, which need no token (see public), then those of the API.
func (a *API) surface() []route {
	const est = "/admin/v1/establishments/:slug"
	const version = est + "/menu-types/:menu_type/versions/:version"
	routes := []route{
		{http.MethodGet, openapi.JSONPath, noCredential, document(openapi.JSON(), openapi.JSONContentType)},
		{http.MethodGet, openapi.YAMLPath, noCredential, document(openapi.YAML(), openapi.YAMLContentType)},
		{http.MethodGet, openapi.ImportSchemaPath, noCredential, document(openapi.ImportSchema(), openapi.ImportSchemaMediaType)},
		{http.MethodGet, "/admin/v1/status", reads, a.getStatus},
		{http.MethodGet, "/admin/v1/establishments", reads, a.listEstablishments},
		{http.MethodGet, "/admin/v1/audit", reads, a.getPlatformAudit},
		{http.MethodPost, importPath, platformAll, a.importBatch},
		{http.MethodGet, est, ownReads, a.getEstablishment},
		{http.MethodPut, est, platformAll, a.putEstablishment},
		{http.MethodGet, est + "/audit", ownReads, a.getAudit},
		{http.MethodPost, est + "/activate", platformAll, a.activate},
		{http.MethodPost, est + "/api/enable", ownSettings, a.enableAPI},
		{http.MethodPost, est + "/api/disable", ownSettings, a.disableAPI},
		{http.MethodPost, est + "/api/regenerate-key", ownSettings, a.regenerateKey},
		{http.MethodPut, est + "/menu-redirect", ownSettings, a.setMenuRedirect},
		{http.MethodPut, est + "/master-menu", platformAll, a.putMasterMenu},
		{http.MethodDelete, est + "/master-menu", platformAll, a.deleteMasterMenu},
		{http.MethodPost, version + "/assets", platformAll, a.addAsset},
		{http.MethodPost, filesPath, platformAll, a.uploadFile},
		{http.MethodPost, filesPath + "/collect", platformAll, a.collectFiles},
		{http.MethodPut, version, platformAll, a.publishVersion},
		{http.MethodDelete, version, platformAll, a.withdrawVersion},
		{http.MethodPost, est + "/webhooks", ownSettings, a.registerWebhook},
		{http.MethodDelete, est + "/webhooks/:id", ownSettings, a.removeWebhook},
	}
	if a.cfg.Deliveries != nil {
		routes = append(routes,
			route{http.MethodGet, est + "/webhooks", ownReads, a.listWebhooks},
			route{http.MethodPost, est + "/webhooks/:id/rotate-secret", ownSettings, a.rotateSecret},
			route{http.MethodPost, est + "/webhooks/:id/enable", ownSettings, a.enableWebhook},
			route{http.MethodPost, est + "/webhooks/:id/ping", ownSettings, a.pingWebhook},
			route{http.MethodGet, est + "/webhooks/:id/deliveries", ownReads, a.listDeliveries},
			// A delivery's path does not name its establishment: the platform's alone.
			route{http.MethodPost, "/admin/v1/deliveries/:id/redeliver", platformAll, a.redeliver},
		)
	}
	if a.cfg.LoginLinks != nil {
		routes = append(routes, route{http.MethodPost, est + "/login-links", platformAll, a.createLoginLink})
	}
	if a.cfg.Tokens != nil {
		routes = append(routes, a.tokenRoutes()...)
	}
	if a.cfg.Platform != nil {
		const hook = "/admin/v1/webhooks/:id"
		routes = append(routes,
			route{http.MethodPost, "/admin/v1/webhooks", platformAll, a.registerPlatformWebhook},
			route{http.MethodGet, "/admin/v1/webhooks", reads, a.listPlatformWebhooks},
			route{http.MethodGet, hook, reads, a.getPlatformWebhook},
			route{http.MethodDelete, hook, platformAll, a.removePlatformWebhook},
			route{http.MethodPost, hook + "/rotate-secret", platformAll, a.rotatePlatformSecret},
			route{http.MethodPost, hook + "/enable", platformAll, a.enablePlatformWebhook},
			route{http.MethodPost, hook + "/ping", platformAll, a.pingPlatformWebhook},
			route{http.MethodGet, hook + "/deliveries", reads, a.listPlatformDeliveries},
		)
	}
	if a.cfg.Changes != nil {
		routes = append(routes, route{http.MethodGet, changesPath, reads, a.listChanges})
	}
	if a.cfg.Destinations != nil {
		routes = append(routes, a.destinationRoutes()...)
	}
	if a.cfg.Debug != nil {
		debug := a.cfg.Debug
		routes = append(routes, route{http.MethodGet, "/admin/debug/*path", platformAll, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			debug.ServeHTTP(w, r)
		}})
	}
	return routes
}

// routes is the admin API behind its middleware, in the order a request meets it: the credential,
// the bound on requests in flight, the Idempotency-Key, then the route and its scope check.
func (a *API) routes() http.Handler {
	r := a.router()
	for _, rt := range a.surface() {
		// Every route is counted under its pattern, when the configuration observes requests.
		r.Handle(rt.method, rt.path, a.observed(rt.method+" "+rt.path, a.allow(rt.access, a.recorded(rt))))
	}
	return a.authenticate(a.bounded(a.idempotency(r)))
}

// recorded returns the handler of rt, recording in the platform's audit each write it accepts
// that names no establishment: the commands on an establishment are recorded by app, on its own.
func (a *API) recorded(rt route) httprouter.Handle {
	if rt.method == http.MethodGet || rt.access == noCredential || strings.Contains(rt.path, ":slug") {
		return rt.handle
	}
	action := rt.method + " " + rt.path
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		m := httpsnoop.CaptureMetricsFn(w, func(w http.ResponseWriter) { rt.handle(w, r, ps) })
		if m.Code < http.StatusMultipleChoices {
			a.cfg.Commands.Record(r.Context(), "", action, r.URL.Path)
		}
	}
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
