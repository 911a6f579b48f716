package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/webhook"
)

// scrapeTimeout bounds what a scrape asks NATS (the log's last sequence, webhook counts).
const scrapeTimeout = 2 * time.Second

// openMetrics makes the registry of the process's metrics: the Go runtime's and the process's,
// and gauges read from the roles at each scrape. The read API adds its own (readapi.Metrics).
func (m *Main) openMetrics() {
	reg := m.metrics
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "publisher", Name: name, Help: help}, f))
	}
	connected := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "publisher", Name: "nats_connected", Help: "1 while the connection is up, by connection.",
	}, []string{"connection"})
	reg.MustRegister(collectorFunc{
		describe: connected.Describe,
		collect: func(ch chan<- prometheus.Metric) {
			for _, nc := range m.node.Conns() {
				if nc == nil {
					continue
				}
				v := 0.0
				if nc.IsConnected() {
					v = 1
				}
				connected.WithLabelValues(nc.Opts.Name).Set(v)
			}
			connected.Collect(ch)
		},
	})
	gauge("log_last_sequence", "Sequence of the last record of the event log.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		seq, _ := m.Store.LastStreamSequence(ctx)
		return float64(seq)
	})
	if m.Config.has(roleProjector) {
		// Only while this process projects: a standby has no position of its own.
		position := prometheus.NewDesc("publisher_projector_position", "Sequence of the last record the projector stored the documents of.", nil, nil)
		reg.MustRegister(collectorFunc{
			describe: func(ch chan<- *prometheus.Desc) { ch <- position },
			collect: func(ch chan<- prometheus.Metric) {
				if p := m.Projector(); p != nil {
					ch <- prometheus.MustNewConstMetric(position, prometheus.GaugeValue, float64(p.Position()))
				}
			},
		})
	}
	gauge("documents_generation", "Generation of the documents bucket served.", func() float64 {
		g, _ := m.generations.State()
		return float64(g.Served())
	})
	m.addStorageMetrics(gauge)
	m.addConnectionMetrics(reg)
}

// addStorageMetrics exports the storage guard's last reading: what a full disk looks like before
// it refuses writes.
func (m *Main) addStorageMetrics(gauge func(name, help string, f func() float64)) {
	st := func(f func(capacity.Status) uint64) func() float64 {
		return func() float64 { return float64(f(m.storage.Status())) }
	}
	gauge("storage_used_bytes", "Bytes JetStream stores (the embedded server's, or the account's).", st(func(s capacity.Status) uint64 { return s.Used }))
	gauge("storage_limit_bytes", "JetStream's limit of stored bytes; 0 when not known.", st(func(s capacity.Status) uint64 { return s.Limit }))
	gauge("storage_volume_free_bytes", "Free bytes of the embedded server's data volume; 0 when not known.", st(func(s capacity.Status) uint64 { return s.VolumeFree }))
	gauge("storage_volume_size_bytes", "Size of the embedded server's data volume; 0 when not known.", st(func(s capacity.Status) uint64 { return s.VolumeSize }))
	gauge("storage_reserve_bytes", "Bytes kept for the service's own writes: content writes are refused once less is left.", st(func(s capacity.Status) uint64 { return s.Reserve }))
	gauge("storage_writes_refused", "1 while content writes are refused for lack of storage.", func() float64 {
		if _, full := m.storage.Full(); full {
			return 1
		}
		return 0
	})
}

// addConnectionMetrics exports each listener's connections: open, refused and closed to make
// room since the start.
func (m *Main) addConnectionMetrics(reg *prometheus.Registry) {
	open := prometheus.NewDesc("publisher_connections_open", "Connections open, by listener.", []string{"listener"}, nil)
	refused := prometheus.NewDesc("publisher_connections_refused_total", "Connections answered and closed at once, over a limit, by listener.", []string{"listener"}, nil)
	evicted := prometheus.NewDesc("publisher_connections_evicted_total", "Connections waiting for a request closed to make room for a new one, by listener.", []string{"listener"}, nil)
	reg.MustRegister(collectorFunc{
		describe: func(ch chan<- *prometheus.Desc) { ch <- open; ch <- refused; ch <- evicted },
		collect: func(ch chan<- prometheus.Metric) {
			for name, st := range m.listeners.Stats() {
				ch <- prometheus.MustNewConstMetric(open, prometheus.GaugeValue, float64(st.Open), name)
				ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(st.Refused), name)
				ch <- prometheus.MustNewConstMetric(evicted, prometheus.CounterValue, float64(st.Evicted), name)
			}
		},
	})
}

// adminObserver counts the admin API's answers by route and status, or is nil without metrics.
func (m *Main) adminObserver() func(route string, status int) {
	if m.metrics == nil {
		return nil
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "admin", Name: "requests_total",
		Help: "Admin API answers by route pattern (the command) and status code.",
	}, []string{"route", "code"})
	m.metrics.MustRegister(requests)
	return func(route string, status int) { requests.WithLabelValues(route, strconv.Itoa(status)).Inc() }
}

// addClockMetrics registers the clock role's progress, read at each scrape.
func (m *Main) addClockMetrics() {
	if m.metrics == nil || m.ClockRole == nil {
		return
	}
	c := m.ClockRole
	m.metrics.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "publisher", Subsystem: "clock", Name: "passes_total",
			Help: "Passes of the clock over the calendar index."}, func() float64 { return float64(c.Status().Passes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "publisher", Subsystem: "clock", Name: "days_started_total",
			Help: "Local days the clock started."}, func() float64 { return float64(c.Status().Appended) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "publisher", Subsystem: "clock", Name: "pending",
			Help: "Establishments whose day start failed, to be tried again."}, func() float64 { return float64(c.Status().Pending) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "publisher", Subsystem: "clock", Name: "last_pass_timestamp_seconds",
			Help: "When the clock's last pass started (Unix time); 0 before any."}, func() float64 {
			if p := c.Status().LastPass; p != nil {
				return float64(p.Started.UnixNano()) / 1e9
			}
			return 0
		}),
	)
}

// webhookAttempts returns the function counting webhook delivery attempts by outcome, or nil
// without metrics.
func (m *Main) webhookAttempts() func(webhook.Status) {
	if m.metrics == nil {
		return nil
	}
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "webhook", Name: "attempts_total",
		Help: "Webhook delivery attempts by outcome.",
	}, []string{"outcome"})
	m.metrics.MustRegister(attempts)
	byOutcome := map[webhook.Status]prometheus.Counter{}
	for _, s := range []webhook.Status{webhook.StatusDelivered, webhook.StatusRetrying, webhook.StatusFailed, webhook.StatusEndpointGone, webhook.StatusSuperseded} {
		byOutcome[s] = attempts.WithLabelValues(string(s))
	}
	return func(s webhook.Status) {
		if c, ok := byOutcome[s]; ok {
			c.Inc()
		}
	}
}

// addMirrorMetrics registers the gauges of the read API's mirror.
func (m *Main) addMirrorMetrics() {
	if m.metrics == nil || m.Mirror == nil {
		return
	}
	mirror := m.Mirror
	for _, g := range []struct {
		name, help string
		f          func() float64
	}{
		{"mirror_establishments", "Establishments the read API holds in memory.", func() float64 { return float64(mirror.Stats().Establishments) }},
		{"mirror_document_bytes", "Bytes of the documents the bundles the read API holds carry (identity and gzip).", func() float64 { return float64(mirror.Stats().DocumentBytes) }},
		{"mirror_held_bytes", "Bytes of the arrays the read API holds its bundles in; equal documents of a bundle are held once.", func() float64 { return float64(mirror.Stats().HeldBytes) }},
		{"mirror_bucket_revision", "Revision of the documents bucket up to which the mirror has applied every write.", func() float64 { return float64(mirror.Applied()) }},
		{"mirror_behind_seconds", "How long the mirror has been behind the documents bucket; 0 when it is not.", func() float64 {
			if m.mirrorLag == nil {
				return 0
			}
			return m.mirrorLag.behind().Seconds()
		}},
	} {
		m.metrics.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "publisher", Name: g.name, Help: g.help}, g.f))
	}
}

// addWebhookMetrics registers the gauges of the webhook dispatcher, read at each scrape.
func (m *Main) addWebhookMetrics() {
	if m.metrics == nil || m.Webhooks == nil {
		return
	}
	d := m.Webhooks
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("publisher_webhook_"+name, help, nil, nil)
	}
	gauges := []struct {
		desc  *prometheus.Desc
		value func(webhook.Stats) int
	}{
		{desc("endpoints", "Registered webhook endpoints."), func(s webhook.Stats) int { return s.Endpoints }},
		{desc("failing_endpoints", "Endpoints whose latest delivery failed and waits for a retry."), func(s webhook.Stats) int { return s.Failing }},
		{desc("disabled_endpoints", "Endpoints disabled (a receiver answered 410 Gone)."), func(s webhook.Stats) int { return s.Disabled }},
		{desc("queued_deliveries", "Deliveries queued, in flight or waiting for a retry."), func(s webhook.Stats) int { return s.Pending }},
		{desc("open_windows", "Establishments whose debounce window is open or just closed."), func(s webhook.Stats) int { return s.Windows }},
		{desc("endpoints_with_missed_changes", "Endpoints with given-up changes, to be listed in their next delivery."), func(s webhook.Stats) int { return s.Missed }},
	}
	m.metrics.MustRegister(collectorFunc{
		describe: func(ch chan<- *prometheus.Desc) {
			for _, g := range gauges {
				ch <- g.desc
			}
		},
		collect: func(ch chan<- prometheus.Metric) {
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			st, err := d.Stats(ctx)
			if err != nil {
				return
			}
			for _, g := range gauges {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.value(st)))
			}
		},
	})
}

type collectorFunc struct {
	describe func(chan<- *prometheus.Desc)
	collect  func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) { c.describe(ch) }
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// serveMetrics answers GET /metrics on addr, a listener of its own: not the public read API.
func (m *Main) serveMetrics(addr string) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.metrics, promhttp.HandlerOpts{ErrorLog: nil}))
	url, err := m.listeners.Listen(addr, capacity.ListenerMetrics, "metrics", mux)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m.MetricsURL = url
	return nil
}

// debugHandler is net/http/pprof under /admin/debug/pprof/, for the admin API to serve behind its
// token.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.StripPrefix("/admin", mux)
}
