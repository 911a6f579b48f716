package telemetry

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opencarte/publisher/readapi"
)

// scrapeTimeout bounds what a scrape asks NATS (the log's last sequence, webhook counts).
const scrapeTimeout = 2 * time.Second

// Registry is the process's metrics.
type Registry struct{ reg *prometheus.Registry }

// New returns a registry with the Go runtime's and the process's collectors.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Registry{reg: reg}
}

// Handler answers a scrape, GET /metrics, on a listener of its own: not the public read API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorLog: nil}))
	return mux
}

// ReadAPI returns the read API's metrics, registered here; nil without a registry.
func (r *Registry) ReadAPI() (*readapi.Metrics, error) {
	if r == nil {
		return nil, nil
	}
	return readapi.NewMetrics(r.reg)
}

// gauge registers a gauge publisher_<name> read from f at each scrape.
func (r *Registry) gauge(name, help string, f func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "publisher", Name: name, Help: help}, f))
}

// collectorFunc is a collector of two functions.
type collectorFunc struct {
	describe func(chan<- *prometheus.Desc)
	collect  func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) { c.describe(ch) }
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
