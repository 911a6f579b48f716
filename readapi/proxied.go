package readapi

import (
	"net/http"
	"net/netip"
	"sync"
)

// DefaultProxiedClientRequests is how many requests one client behind a trusted proxy may have in
// flight at once unless configured.
const DefaultProxiedClientRequests = 256

// inflight counts the requests each client behind a trusted proxy has in flight. The listener
// counts a proxy's connections in its total only, since a proxy carries many clients: this is
// the per-client bound for them, by the address the proxy forwards.
type inflight struct {
	limit int
	mu    sync.Mutex
	n     map[netip.Prefix]int // only the clients with a request in flight
}

func (f *inflight) acquire(client netip.Prefix) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[client] >= f.limit {
		return false
	}
	f.n[client]++
	return true
}

func (f *inflight) release(client netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[client]--; f.n[client] <= 0 {
		delete(f.n, client)
	}
}

// limitProxiedClients answers 429 to a request through a trusted proxy whose client already has
// its share of requests in flight. Requests from other peers pass as they are: the listener has
// counted their connections.
func (s *Server) limitProxiedClients(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := peerAddr(r.RemoteAddr)
		if !s.trusts(peer) {
			next.ServeHTTP(w, r)
			return
		}
		client := clientPrefix(s.forwardedClient(r.Header[forwardedForHeader], peer))
		if !s.proxied.acquire(client) {
			writeError(w, r, tooManyConnections)
			return
		}
		defer s.proxied.release(client)
		next.ServeHTTP(w, r)
	})
}
