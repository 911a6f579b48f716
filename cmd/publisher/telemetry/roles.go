package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencarte/publisher/cmd/publisher/clock"
	"github.com/opencarte/publisher/readapi"
)

// Projector registers the projector's metrics: its position, read at each scrape while position
// says this process projects (a standby has no position of its own), and the changes it stored,
// which the function returned counts.
func (r *Registry) Projector(position func() (uint64, bool)) (changed func()) {
	if r == nil {
		return nil
	}
	desc := prometheus.NewDesc("publisher_projector_position", "Sequence of the last record the projector stored the documents of.", nil, nil)
	r.reg.MustRegister(collectorFunc{
		describe: func(ch chan<- *prometheus.Desc) { ch <- desc },
		collect: func(ch chan<- prometheus.Metric) {
			if p, ok := position(); ok {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(p))
			}
		},
	})
	counter := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "projector", Name: "changes_total",
		Help: "Establishments whose documents the projector stored at a new revision.",
	})
	r.reg.MustRegister(counter)
	return counter.Inc
}

// AdminRequests returns the function counting the admin API's answers by route and status.
func (r *Registry) AdminRequests() func(route string, status int) {
	if r == nil {
		return nil
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "admin", Name: "requests_total",
		Help: "Admin API answers by route pattern (the command) and status code.",
	}, []string{"route", "code"})
	r.reg.MustRegister(requests)
	return func(route string, status int) { requests.WithLabelValues(route, strconv.Itoa(status)).Inc() }
}

// clockStatus is the clock role as a scrape reads it.
type clockStatus interface{ Status() clock.Status }

// Clock registers the clock role's progress, read at each scrape.
func (r *Registry) Clock(c clockStatus) {
	if r == nil {
		return
	}
	r.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "publisher", Subsystem: "clock", Name: "passes_total",
			Help: "Passes of the clock over the calendar index."}, func() float64 { return float64(c.Status().Passes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "publisher", Subsystem: "clock", Name: "days_started_total",
			Help: "Local days the clock started."}, func() float64 { return float64(c.Status().Appended) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "publisher", Subsystem: "clock", Name: "days_prepared_total",
			Help: "Next local days the clock prepared before their midnight."}, func() float64 { return float64(c.Status().Prepared) }),
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

// mirrorStats is the read API's mirror as a scrape reads it.
type mirrorStats interface {
	Stats() readapi.MirrorStats
	Applied() uint64
}

// Mirror registers the gauges of the read API's mirror and of its lag.
func (r *Registry) Mirror(mirror mirrorStats, lag *Lag) {
	if r == nil {
		return
	}
	for _, g := range []struct {
		name, help string
		f          func() float64
	}{
		{"mirror_establishments", "Establishments the read API holds in memory.", func() float64 { return float64(mirror.Stats().Establishments) }},
		{"mirror_document_bytes", "Bytes of the documents the bundles the read API holds carry (identity and gzip).", func() float64 { return float64(mirror.Stats().DocumentBytes) }},
		{"mirror_held_bytes", "Bytes of the arrays the read API holds its bundles in; equal documents of a bundle are held once.", func() float64 { return float64(mirror.Stats().HeldBytes) }},
		{"mirror_bucket_revision", "Revision of the documents bucket up to which the mirror has applied every write.", func() float64 { return float64(mirror.Applied()) }},
		{"mirror_behind_seconds", "How long the mirror has been behind the documents bucket; 0 when it is not.", func() float64 { return lag.Behind().Seconds() }},
	} {
		r.gauge(g.name, g.help, g.f)
	}
}
