// Command publisher is the one binary of the content publisher: it serves the read API, projects
// the event log, delivers webhooks, runs the clock and the admin API (any set of these roles),
// on an embedded NATS server by default or on a NATS cluster, and drives the admin API from the
// command line (the admin and import commands, in package client).
//
// Package main only wires. It holds the commands and their flags (serve, verify, rebuild, version;
// import and admin are package client's), the exit status each outcome maps to, and Main, a running publisher shared by the binary and its
// end-to-end tests, whose Open reads as the list of the roles it starts: the NATS node, the
// storage guard, the event log and the generations, the webhook dispatcher, the application
// layer, the projector, the clock, the read API, the admin API, then the metrics listener and
// the deliveries. What a role does is its package's: the supervision of the loops (supervise),
// the HTTP listeners (listeners), the metrics and the mirror lag (telemetry), the demo (demo),
// the logger (logging), the webhook dispatcher as the application layer sees it (webhookapp),
// the generations and their lease (generation), the NATS this process talks to (node).
//
// Invariants: a failing role never stops the others (each loop runs supervised, and is reported
// degraded while it fails); Close stops the listeners, then the roles, then the read API and NATS,
// none of them waited for unbounded, so that reads are answered until the end; a secret the
// process generates is written to its data directory at mode 0600 and never enters NATS.
//
// It may import every package of the module but the benchmark, the dependency test and the
// packages that support the tests.
package main
