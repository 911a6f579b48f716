package readapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Route parameter names.
const (
	paramSlug     = "slug"
	paramMenuType = "menu_type"
)

// getEstablishment serves GET /api/v1/establishments/:slug.
func (s *Server) getEstablishment(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if e, a := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		s.serveDocument(w, r, e, a, &e.establishment)
	}
}

// getHours serves GET /api/v1/establishments/:slug/hours.
func (s *Server) getHours(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if e, a := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		s.serveDocument(w, r, e, a, &e.hours)
	}
}

// getMenus serves GET /api/v1/establishments/:slug/menus in the variant of the locale parameter.
func (s *Server) getMenus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if e, a := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		s.serveDocument(w, r, e, a, e.menus.pick(menuLocale(r.URL.RawQuery)))
	}
}

// getJSONLD serves GET /api/v1/establishments/:slug/jsonld in the language of the locale
// parameter, French unless it is en. A bundle that has no JSON-LD yet answers 404, counted.
func (s *Server) getJSONLD(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	e, a := s.authorize(w, r, ps.ByName(paramSlug))
	if e == nil {
		return
	}
	d := e.jsonld.pick(menuLocale(r.URL.RawQuery))
	if d.body == nil {
		if s.chargeKey(w, r, e, a, chargeRequest) {
			writeError(w, r, notFound)
		}
		return
	}
	s.serveDocument(w, r, e, a, d)
}

// getMenu serves GET /api/v1/establishments/:slug/menus/:menu_type in the variant of the locale
// parameter. Only active menu types with a current version have a document; any other is 404,
// which counts against the key like any request made with a valid key.
func (s *Server) getMenu(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	e, a := s.authorize(w, r, ps.ByName(paramSlug))
	if e == nil {
		return
	}
	menuType := ps.ByName(paramMenuType)
	var v *variants
	if validSlug(menuType) {
		v = e.menuDetails[menuType]
	}
	if v == nil {
		if s.chargeKey(w, r, e, a, chargeRequest) {
			writeError(w, r, notFound)
		}
		return
	}
	s.serveDocument(w, r, e, a, v.pick(menuLocale(r.URL.RawQuery)))
}

// authorize decides whether an API request for slug may be answered, in an order that is part
// of the contract: the per-IP quota first, which counts every API request; then a missing key is
// 401; an invalid or unknown slug, a draft establishment or a disabled API is 404; a key that is
// not the current key of this establishment is 401. It answers a failure itself and returns nil, or
// returns the entry to serve and the per-IP outcome for the per-key quota, which the caller
// applies once it knows whether the answer is a 304 (see serveDocument).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, slug string) (*served, admission) {
	a, ok := s.admitClient(w, r)
	if !ok {
		return nil, a
	}
	key, ok := apiKey(r)
	if !ok {
		writeError(w, r, unauthorized)
		return nil, a
	}
	if !validSlug(slug) {
		writeError(w, r, notFound)
		return nil, a
	}
	e := s.source.lookup(slug)
	if e == nil || !e.apiOpen() {
		writeError(w, r, notFound)
		return nil, a
	}
	if !e.keyMatches(key) {
		writeError(w, r, unauthorized)
		return nil, a
	}
	return e, a
}
