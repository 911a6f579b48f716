// Package generation owns the life of the documents' generations: which one is served, the
// projector that renders into it, and the rebuild that replaces it.
//
// The documents are served from one generation of the bucket of bundles at a time. A rebuild
// renders the log into the next generation while the current one is served and projected, then
// switches every process to it at once. The key documents of the bucket GENERATIONS (Record)
// says which generation is current and what rebuild is under way; every process watches it
// (Watch), and a read node without the projector follows it (Watch.Follow).
//
//   - building: the rebuild renders into the next generation; read nodes load it beside the
//     current one.
//   - switching: the projector of the current generation stops and lets the rebuild take its
//     lease; the rebuild brings the next generation level with the log and above the current
//     one, then writes, in one update, the next generation as current and the phase announcing.
//     A projector that finds no rebuild holding the lease after switchGrace goes on projecting the
//     current generation, so that a rebuild that died stops nothing for long.
//   - announcing: read nodes serve the new generation as soon as they hold it up to the switch
//     revision; the projector projects into it; the rebuild announces the establishments whose
//     documents changed, then removes the old generation and the rebuild record.
//
// Work that one process at a time must do runs under a lease: a key of the bucket LEASES held
// by one process, which renews it; the others stand by and take it over once it is no longer
// renewed (the process died, or lost NATS). The projector is one (Supervisor): two projecting
// the same log would announce every change twice. A rebuild holds a lease of its own for its
// whole run, and the projector's while it switches. The webhook dispatchers and the clocks need
// none: they share their work through durable consumers and conditional appends.
//
// Rebuild runs the protocol in phases, each a function: build (render the log into the next
// generation), verify (compare it with the log's rendering), settle (raise what the current
// projector changed meanwhile), switch (make it current while projection is paused, within a
// deadline, or call the switch off), announce (signal what the switch changed) and remove (the
// old generation, once no read node serves it). Each phase writes where it is in the record, so
// that a rebuild run again resumes.
//
// Waiter answers when a change is served, on this process's projector or another's checkpoint,
// and in this process's read API when it has one: what ?wait=true waits for.
//
// It imports projections/runner, projections/dockey, domain, events and nats.go, never the read API, the webhooks, the admin
// API or package main: the process gives it what it needs (a way to provision with retries,
// where to report health, a logger) through Config and RebuildConfig.
package generation
