package telemetry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencarte/publisher/webhook/destination"
)

// Destinations registers the metrics of the broker destinations, read at each scrape from list:
// per destination (at most destination.MaxDestinations), the events published, the failed
// attempts, the gaps, the lag and the state; for all of them, how many are in each state and the largest
// lag, which the alerts read.
func (r *Registry) Destinations(list func(ctx context.Context) ([]destination.Status, error)) {
	if r == nil {
		return
	}
	labels := []string{"destination", "type"}
	var (
		published = prometheus.NewDesc("publisher_destination_published_total", "Events the destination's broker took.", labels, nil)
		failures  = prometheus.NewDesc("publisher_destination_failures_total", "Attempts to publish to the destination that failed.", labels, nil)
		records   = prometheus.NewDesc("publisher_destination_lag_records", "Change signals not yet published to the destination.", labels, nil)
		seconds   = prometheus.NewDesc("publisher_destination_lag_seconds", "Age of the oldest change not yet published to the destination.", labels, nil)
		gaps      = prometheus.NewDesc("publisher_destination_gaps_total", "Times the destination was behind the changes kept, and published every establishment's state again.", labels, nil)
		state     = prometheus.NewDesc("publisher_destination_state", "1 for the destination's state: active, failing or paused.", append(labels, "state"), nil)
		states    = prometheus.NewDesc("publisher_destinations", "Destinations by state.", []string{"state"}, nil)
		maxLag    = prometheus.NewDesc("publisher_destinations_max_lag_seconds", "The largest lag of a destination that is not paused.", nil, nil)
	)
	all := []*prometheus.Desc{published, failures, records, seconds, gaps, state, states, maxLag}
	r.reg.MustRegister(collectorFunc{
		describe: func(ch chan<- *prometheus.Desc) {
			for _, d := range all {
				ch <- d
			}
		},
		collect: func(ch chan<- prometheus.Metric) {
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			sts, err := list(ctx)
			if err != nil {
				return
			}
			count := map[string]int{destination.StateActive: 0, destination.StateFailing: 0, destination.StatePaused: 0}
			lag := 0.0
			for _, st := range sts {
				count[st.State]++
				if st.State != destination.StatePaused {
					lag = max(lag, st.LagSeconds)
				}
				l := []string{st.ID, st.Type}
				ch <- prometheus.MustNewConstMetric(published, prometheus.CounterValue, float64(st.Published), l...)
				ch <- prometheus.MustNewConstMetric(failures, prometheus.CounterValue, float64(st.Failures), l...)
				ch <- prometheus.MustNewConstMetric(gaps, prometheus.CounterValue, float64(st.Gaps), l...)
				ch <- prometheus.MustNewConstMetric(records, prometheus.GaugeValue, float64(st.LagRecords), l...)
				ch <- prometheus.MustNewConstMetric(seconds, prometheus.GaugeValue, st.LagSeconds, l...)
				ch <- prometheus.MustNewConstMetric(state, prometheus.GaugeValue, 1, st.ID, st.Type, st.State)
			}
			for state, n := range count {
				ch <- prometheus.MustNewConstMetric(states, prometheus.GaugeValue, float64(n), state)
			}
			ch <- prometheus.MustNewConstMetric(maxLag, prometheus.GaugeValue, lag)
		},
	})
}
