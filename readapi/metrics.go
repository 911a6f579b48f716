package readapi

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
)

// The routes requests are counted by, in the order of Metrics' tables.
var metricRoutes = [...]string{
	"establishment", "hours", "menus", "menu", "jsonld", "redirect_master_menu", "redirect_menus", "file",
	"healthz", "readyz", "openapi", "docs", "other",
}

const (
	routeEstablishment = iota
	routeHours
	routeMenus
	routeMenu
	routeJSONLD
	routeRedirectMasterMenu
	routeRedirectMenus
	routeFile
	routeHealthz
	routeReadyz
	routeOpenAPI
	routeDocs
	routeOther
)

// metricCodes are the statuses counted under their own label; any other is "other".
var metricCodes = [...]int{200, 206, 302, 304, 400, 401, 403, 404, 405, 406, 412, 416, 429, 500, 503}

// Metrics counts the read API's requests by route and status, their latency by route, and the
// requests each quota refused. Every label value is bound when it is made, so that counting a
// request allocates nothing.
type Metrics struct {
	requests [len(metricRoutes)][len(metricCodes) + 1]prometheus.Counter
	latency  [len(metricRoutes)]prometheus.Observer
	refused  [3]prometheus.Counter // by quota: ip, key, redirect
	writers  sync.Pool
}

// NewMetrics makes the read API's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "read_api", Name: "requests_total",
		Help: "Requests of the read API, by route and status code.",
	}, []string{"route", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "publisher", Subsystem: "read_api", Name: "request_duration_seconds",
		Help:    "Time from a request's arrival to its answer written, by route.",
		Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1},
	}, []string{"route"})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "read_api", Name: "quota_refusals_total",
		Help: "Requests refused with 429, by quota.",
	}, []string{"quota"})
	for _, c := range []prometheus.Collector{requests, latency, refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m := &Metrics{writers: sync.Pool{New: func() any { return new(statusWriter) }}}
	for r, route := range metricRoutes {
		for c, code := range metricCodes {
			m.requests[r][c] = requests.WithLabelValues(route, strconv.Itoa(code))
		}
		m.requests[r][len(metricCodes)] = requests.WithLabelValues(route, "other")
		m.latency[r] = latency.WithLabelValues(route)
	}
	for i, q := range []string{"ip", "key", "redirect"} {
		m.refused[i] = refused.WithLabelValues(q)
	}
	return m, nil
}

// count counts one answer of route with status, which took d.
func (m *Metrics) count(route, status int, d time.Duration) {
	c := len(metricCodes)
	for i, code := range metricCodes {
		if code == status {
			c = i
			break
		}
	}
	m.requests[route][c].Inc()
	m.latency[route].Observe(d.Seconds())
}

// refusedBy counts a 429 of the policy p of s.
func (s *Server) refusedBy(p *policy) {
	m := s.metrics
	if m == nil {
		return
	}
	switch p {
	case s.ipQuota:
		m.refused[0].Inc()
	case s.keyQuota:
		m.refused[1].Inc()
	case s.redirectQuota:
		m.refused[2].Inc()
	}
}

// measured returns h counted under route, or h itself without metrics.
func (s *Server) measured(route int, h httprouter.Handle) httprouter.Handle {
	m := s.metrics
	if m == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		start := s.now()
		sw := m.writers.Get().(*statusWriter)
		*sw = statusWriter{ResponseWriter: w}
		defer m.done(route, sw, start, s.now)
		h(sw, r, ps)
	}
}

// done counts the answer sw recorded, a panicking handler's as the 500 it becomes, and puts sw
// back.
func (m *Metrics) done(route int, sw *statusWriter, start time.Time, now func() time.Time) {
	status := sw.statusCode()
	if v := recover(); v != nil {
		if v != http.ErrAbortHandler {
			status = http.StatusInternalServerError
		}
		m.count(route, status, now().Sub(start))
		*sw = statusWriter{}
		m.writers.Put(sw)
		panic(v) // answered by the server's recovery, outside
	}
	m.count(route, status, now().Sub(start))
	*sw = statusWriter{}
	m.writers.Put(sw)
}

// measuredOther counts h's answers under the route "other".
func (s *Server) measuredOther(h http.HandlerFunc) http.HandlerFunc {
	if s.metrics == nil {
		return h
	}
	m := s.measured(routeOther, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { h(w, r) })
	return func(w http.ResponseWriter, r *http.Request) { m(w, r, nil) }
}

// statusWriter records the status and the body size of an answer, for the metrics and the access
// log. It passes io.ReaderFrom through, so that a file is still sent with sendfile.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(w.ResponseWriter, r)
	}
	w.bytes += n
	return n, err
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
