package telemetry

import (
	"context"
	"iter"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/readapi"
)

// Process is what of the process every scrape reads, whatever its roles.
type Process struct {
	Conns      func() []*nats.Conn // the NATS connections, by their names
	Log        logTail
	Generation func() int // the generation of the documents served
	Storage    storageGuard
	Listeners  connCounts
}

// logTail is the event log as a scrape reads it.
type logTail interface {
	LastStreamSequence(ctx context.Context) (uint64, error)
}

// storageGuard is the storage guard's last reading.
type storageGuard interface {
	Status() capacity.Status
	Full() (reason string, full bool)
}

// connCounts are the listeners' connection counts, by listener.
type connCounts interface {
	Stats() iter.Seq2[string, readapi.ConnStats]
}

// Process registers the gauges read from the process's parts at each scrape.
func (r *Registry) Process(p Process) {
	if r == nil {
		return
	}
	r.addConnected(p.Conns)
	r.gauge("log_last_sequence", "Sequence of the last record of the event log.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		seq, _ := p.Log.LastStreamSequence(ctx)
		return float64(seq)
	})
	r.gauge("documents_generation", "Generation of the documents bucket served.", func() float64 { return float64(p.Generation()) })
	r.addStorage(p.Storage)
	r.addConnections(p.Listeners)
}

// addConnected exports whether each NATS connection is up.
func (r *Registry) addConnected(conns func() []*nats.Conn) {
	connected := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "publisher", Name: "nats_connected", Help: "1 while the connection is up, by connection.",
	}, []string{"connection"})
	r.reg.MustRegister(collectorFunc{
		describe: connected.Describe,
		collect: func(ch chan<- prometheus.Metric) {
			for _, nc := range conns() {
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
}

// addStorage exports the storage guard's last reading: what a full disk looks like before it
// refuses writes.
func (r *Registry) addStorage(g storageGuard) {
	st := func(f func(capacity.Status) uint64) func() float64 {
		return func() float64 { return float64(f(g.Status())) }
	}
	r.gauge("storage_used_bytes", "Bytes JetStream stores (the embedded server's, or the account's).", st(func(s capacity.Status) uint64 { return s.Used }))
	r.gauge("storage_limit_bytes", "JetStream's limit of stored bytes; 0 when not known.", st(func(s capacity.Status) uint64 { return s.Limit }))
	r.gauge("storage_volume_free_bytes", "Free bytes of the embedded server's data volume; 0 when not known.", st(func(s capacity.Status) uint64 { return s.VolumeFree }))
	r.gauge("storage_volume_size_bytes", "Size of the embedded server's data volume; 0 when not known.", st(func(s capacity.Status) uint64 { return s.VolumeSize }))
	r.gauge("storage_reserve_bytes", "Bytes kept for the service's own writes: content writes are refused once less is left.", st(func(s capacity.Status) uint64 { return s.Reserve }))
	r.gauge("storage_writes_refused", "1 while content writes are refused for lack of storage.", func() float64 {
		if _, full := g.Full(); full {
			return 1
		}
		return 0
	})
}

// addConnections exports each listener's connections: open, refused and closed to make room
// since the start.
func (r *Registry) addConnections(listeners connCounts) {
	open := prometheus.NewDesc("publisher_connections_open", "Connections open, by listener.", []string{"listener"}, nil)
	refused := prometheus.NewDesc("publisher_connections_refused_total", "Connections answered and closed at once, over a limit, by listener.", []string{"listener"}, nil)
	evicted := prometheus.NewDesc("publisher_connections_evicted_total", "Connections waiting for a request closed to make room for a new one, by listener.", []string{"listener"}, nil)
	r.reg.MustRegister(collectorFunc{
		describe: func(ch chan<- *prometheus.Desc) { ch <- open; ch <- refused; ch <- evicted },
		collect: func(ch chan<- prometheus.Metric) {
			for name, st := range listeners.Stats() {
				ch <- prometheus.MustNewConstMetric(open, prometheus.GaugeValue, float64(st.Open), name)
				ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(st.Refused), name)
				ch <- prometheus.MustNewConstMetric(evicted, prometheus.CounterValue, float64(st.Evicted), name)
			}
		},
	})
}
