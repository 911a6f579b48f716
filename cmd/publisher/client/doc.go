// Package client is the command line's client of the admin API: the admin command, one request
// per run (Admin), and bulk import (Import), which streams establishments from files, directories
// and standard input through the API's batch endpoint.
//
// Each subcommand of admin is one row of a table (subcommands.go): its arguments' synopsis, which
// their count is checked against, its line of the usage, its request, and, where the admin API
// answers a failed operation with success (a test delivery the receiver refused, a file
// collection that stopped early), the check that makes it the command's error. A wrong command
// line is a usage error and never reaches the API; help needs no token.
//
// It talks HTTP only: it imports the standard library, envflag (its command line's grammar and
// usage errors) and progress (the display import shares with verify), and neither the domain, the event log,
// the projections, the read API, webhooks nor the admin API's own package. The admin API's
// limits on a batch (MaxBatchDocuments, MaxDocumentBytes) are restated here; package main's
// tests hold the two equal.
//
// Bulk import reads its inputs (inputs.go), cuts them into batches (batch.go) that a pipeline of
// workers sends (pipeline.go, send.go) and reports in input order (report.go, stats.go). Its
// invariants:
//   - Memory is bounded by the batches in flight (twice --parallel, each cut before 8 MiB), not
//     by the input: a line over the admin API's limit is read through without being held.
//   - Every try of a batch carries the same Idempotency-Key, derived from the run and the
//     batch's bytes, so that a retry is applied once; a request is never replayed by the HTTP
//     transport behind the importer's back. A document answered as a duplicate after a lost
//     answer is named, since the API key that answer held cannot be shown again.
//   - A try under way finishes even when the run is interrupted: its answer may hold API keys,
//     which the server shows once. Results whose stdout failed are written to stderr.
//   - A failure of the whole request that would recur for every batch (a 401, a 400) stops the
//     run; a 429, 502, 503, 504, a lost answer or a line answered 503 is tried again, after a
//     jittered backoff or the Retry-After given.
package client
