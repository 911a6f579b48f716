package readapi

import (
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// statusOK is the answer of /healthz, and of /readyz once ready.
var statusOK = newFixedAnswer(http.StatusOK, `{"status":"ok"}`)

// healthz serves GET /healthz: 200 as long as the process serves HTTP. It needs no key and
// counts against no quota.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	writeAnswer(w, r, &statusOK)
}

// readyz serves GET /readyz: 200 once the mirror holds every bundle the bucket held when it
// started watching, 503 {"error":"Not ready"} before, when every API answer would be a 404. It
// needs no key and counts against no quota. While some other part of the process is degraded,
// reads still go on: the answer is 200 {"status":"degraded","degraded":[...]}, a line for each.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	select {
	case <-s.ready:
		// Ready, unless the mirror is behind the bucket for longer than allowed: a balancer
		// then sends the traffic to the nodes that are not.
		if s.behind != nil && s.maxLag > 0 && s.behind() > s.maxLag {
			writeError(w, r, notReady)
			return
		}
		if s.degraded != nil {
			if parts := s.degraded(); len(parts) > 0 {
				writeDegraded(w, r, parts)
				return
			}
		}
		writeAnswer(w, r, &statusOK)
	default:
		writeError(w, r, notReady)
	}
}

// writeDegraded answers a probe 200 with the parts of the process that are degraded. Probes are
// rare, and the list short: it is encoded for each.
func writeDegraded(w http.ResponseWriter, r *http.Request, parts []string) {
	body, _ := json.Marshal(struct {
		Status   string   `json:"status"`
		Degraded []string `json:"degraded"`
	}{"degraded", parts})
	a := newFixedAnswer(http.StatusOK, string(body))
	writeAnswer(w, r, &a)
}
