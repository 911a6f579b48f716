package telemetry

import (
	"net/http"
	"net/http/pprof"
)

// Profiles is net/http/pprof under /admin/debug/pprof/, for the admin API to serve behind its
// token: never on the public read API.
func Profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.StripPrefix("/admin", mux)
}
