package telemetry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencarte/publisher/webhook"
)

// WebhookAttempts returns the function counting webhook delivery attempts by outcome.
func (r *Registry) WebhookAttempts() func(webhook.Status) {
	if r == nil {
		return nil
	}
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "publisher", Subsystem: "webhook", Name: "attempts_total",
		Help: "Webhook delivery attempts by outcome.",
	}, []string{"outcome"})
	r.reg.MustRegister(attempts)
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

// webhookStats is the webhook dispatcher as a scrape reads it.
type webhookStats interface {
	Stats(ctx context.Context) (webhook.Stats, error)
}

// Webhooks registers the gauges of the webhook dispatcher, read at each scrape.
func (r *Registry) Webhooks(d webhookStats) {
	if r == nil {
		return
	}
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
	r.reg.MustRegister(collectorFunc{
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
