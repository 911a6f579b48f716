package readapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// redirectMasterMenu serves GET /r/master_menu?establishment=<slug>: a 302 to the unified card
// file of an active establishment, whatever its API and redirect settings; 404 when there is no
// such file. It needs no key, its URL going into image tags and links, and counts against the
// per-IP redirect quota.
func (s *Server) redirectMasterMenu(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if !s.admitRedirect(w, r) {
		return
	}
	e := s.redirectable(r)
	if e == nil || e.masterMenu == nil {
		writeError(w, r, notFound)
		return
	}
	redirectTo(w, e.masterMenu)
}

// redirectMenus serves GET /r/menus?establishment=<slug>&menu_type=<slug>&locale=<fr|en>: a 302
// to the first page of the current file of the menu type for the locale (fr when absent or
// unknown). It answers 404 unless the establishment is active and has menu redirects enabled, the
// menu type is active, and a file covers the locale. It counts against the per-IP redirect quota.
func (s *Server) redirectMenus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if !s.admitRedirect(w, r) {
		return
	}
	e := s.redirectable(r)
	if e == nil || !e.menuRedirect {
		writeError(w, r, notFound)
		return
	}
	menuType, _ := queryValue(r.URL.RawQuery, "menu_type")
	if !validSlug(menuType) {
		writeError(w, r, notFound)
		return
	}
	rd, ok := e.redirects[menuType]
	if !ok {
		writeError(w, r, notFound)
		return
	}
	location := rd.fr
	if l, _ := queryValue(r.URL.RawQuery, "locale"); l == "en" {
		location = rd.en
	}
	if location == nil {
		writeError(w, r, notFound)
		return
	}
	redirectTo(w, location)
}

// redirectable returns the active establishment named by the establishment query parameter, or
// nil.
func (s *Server) redirectable(r *http.Request) *served {
	slug, _ := queryValue(r.URL.RawQuery, "establishment")
	if !validSlug(slug) {
		return nil
	}
	e := s.source.lookup(slug)
	if e == nil || !e.active {
		return nil
	}
	return e
}
