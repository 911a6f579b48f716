// Package app is the write side's application layer: one type, Commands, with one typed method per
// command an administrator, the back office or the clock can give. Each method loads the
// establishment, lets package domain decide, and appends the events to the log with optimistic
// concurrency and idempotency. Keys, ids and secrets are minted here, never by a transport: the
// admin HTTP API, the command line, the demo, bulk import and the clock all call these methods,
// and a transport only decodes, calls and maps the error's Kind to its own status. Its sibling
// Deliveries holds the operator's views and actions on webhook endpoints and their deliveries,
// in the same shape: a transport reaches the webhook dispatcher only through it.
//
// It imports domain and events. It does not import the webhook dispatcher: it declares the small
// interfaces it needs of it (webhookRegistry, endpointStates, deliveryLog) and answers with types
// of its own (EndpointState, Attempt, Delivery), and the dispatcher's refusals get their kinds
// where it is wired in (Classify). It never imports a transport. Every refusal a transport can
// meet has a Kind, given by one table (KindOf): a new sentinel is a new row there.
//
// # Loading an establishment
//
// An establishment is loaded with a bounded number of reads, never a consumer: the last record of
// its subject (one direct get), then, unless the aggregate is in the cache at that record, its
// snapshot (one key-value get) and the records after it (batched direct gets, from the record
// the snapshot or the cached state ends with, which is checked to be that one). Without a usable
// snapshot the whole history is read and a snapshot is written. A snapshot is written again once
// SnapshotEvery records have been folded since the last one, so a load reads at most that many
// records.
//
// A snapshot is a cache of the log. It records the sequence and command id of the last record it
// folds: it is used only while the log still holds that record there, and only when its format
// (domain.StateFormat and this package's own fields) is the one this code writes. Anything else
// is ignored and the state is folded from the log. Deleting every snapshot loses nothing.
//
// # Memory
//
// At most CacheSize aggregates are kept in memory, least recently used first out, and only of
// establishments that exist. An aggregate is out of the cache while a command changes it, and
// goes back only once its events are stored: a failure, or a panic, leaves nothing half applied
// there. An establishment being changed is locked, and its lock is forgotten once nobody waits on
// it. At most MaxLoads loads run at once; the others wait.
//
// # Concurrency and idempotency
//
// Commands on one establishment run one at a time in a process; across processes, the append's
// expected sequence decides, and the loser reloads and decides again (up to maxAttempts times).
// A command id derived from an Idempotency-Key is remembered for IdempotencyWindow, in the
// aggregate's cached state and its snapshot: a retry is answered from the log before it is decided
// again, and the same key with another request is refused. Webhook endpoints, kept by their registry and not in
// the log, take their id from the key instead: a retry finds the endpoint the key made, removed
// or not.
//
// # Who did what
//
// A transport names the credential behind a command by putting an Actor in its context
// (WithActor). Every accepted command that changed something records it: in its record's headers
// (ActorIDHeader, ActorNameHeader) for a command on the log, and as an entry of the
// establishment's audit trail for every command, webhook endpoints included; Audit reads them
// newest first. Commands on no one establishment, and a transport's own, are recorded by the
// transport with Record (PlatformAudit reads those on none).
//
// # The calendar
//
// Every record carries a CalendarHeader with the establishment's time zone, whether its public
// documents depend on the date, and its recorded local date, as they are after the record: the
// clock keeps its index of establishments to wake up at midnight from these headers alone, and
// StartDayAt appends a day on such a calendar with one request, expecting the record it is of.
package app
