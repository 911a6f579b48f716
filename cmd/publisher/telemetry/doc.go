// Package telemetry is what the process tells about itself: its Prometheus metrics, the lag of
// the read API's mirror behind the documents bucket, its memory as the Go runtime sees it, and
// its profiles.
//
// A Registry holds the Go runtime's and the process's collectors, and gauges read from the roles
// at each scrape (the NATS connections, the log, the projector, the generation served, storage,
// the listeners, the clock, the webhooks, the mirror); the read API adds its own. A scrape asks
// NATS at most scrapeTimeout, never on a request's path. A nil *Registry is a process without
// metrics: its methods register nothing and the functions they return are nil, which the roles
// take as no counting.
//
// Lag asks, once a second, whether the bucket holds a write after the mirror's applied revision;
// /readyz, the admin status and the metrics read it, and the process has the mirror watch again
// when it applies nothing while behind (Lag.Stalled).
//
// It imports the roles' packages for the types of their readings (readapi, webhook, clock,
// capacity), nats.go and the Prometheus client; never package main, the admin API, the
// application layer's commands or the generations: the process gives it what to read.
package telemetry
