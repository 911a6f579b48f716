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
	if e := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		serveDocument(w, r, &e.establishment)
	}
}

// getHours serves GET /api/v1/establishments/:slug/hours.
func (s *Server) getHours(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if e := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		serveDocument(w, r, &e.hours)
	}
}

// getMenus serves GET /api/v1/establishments/:slug/menus in the variant of the locale parameter.
func (s *Server) getMenus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if e := s.authorize(w, r, ps.ByName(paramSlug)); e != nil {
		serveDocument(w, r, e.menus.pick(menuLocale(r.URL.RawQuery)))
	}
}

// getMenu serves GET /api/v1/establishments/:slug/menus/:menu_type in the variant of the locale
// parameter. Only active menu types with a current version have a document; any other is 404.
func (s *Server) getMenu(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	e := s.authorize(w, r, ps.ByName(paramSlug))
	if e == nil {
		return
	}
	menuType := ps.ByName(paramMenuType)
	if !validSlug(menuType) {
		writeError(w, r, notFound)
		return
	}
	v := e.menuDetails[menuType]
	if v == nil {
		writeError(w, r, notFound)
		return
	}
	serveDocument(w, r, v.pick(menuLocale(r.URL.RawQuery)))
}

// authorize decides whether an API request for slug may be answered, in the order DESIGN.md
// fixes: a missing key is 401; an invalid or unknown slug, a draft establishment or a disabled
// API is 404; a key that is not the current key of this establishment is 401. It answers the
// failure itself and returns nil, or returns the entry to serve.
//
// The per-key quota belongs here, after the key check: it counts requests made with a valid key.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, slug string) *entry {
	key, ok := apiKey(r)
	if !ok {
		writeError(w, r, unauthorized)
		return nil
	}
	if !validSlug(slug) {
		writeError(w, r, notFound)
		return nil
	}
	e := s.source.lookup(slug)
	if e == nil || !e.apiOpen() {
		writeError(w, r, notFound)
		return nil
	}
	if !e.keyMatches(key) {
		writeError(w, r, unauthorized)
		return nil
	}
	return e
}
