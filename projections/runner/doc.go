// Package runner projects the event log into the bucket of bundles the read API serves: it
// rebuilds every establishment's aggregate from its records, has projections render it and
// decide its revision, stores the bundles that changed in the KV bucket dockey.Bucket (or a
// rebuild's generation of it), announces each rise of a revision, then follows the log. Of a
// stored bundle it keeps only a projections.BundleSummary, which is all deciding the next one
// takes: the documents themselves live in the bucket. It also verifies a bucket against the log
// (Verify), and supports a rebuild into a new generation (Config.Replaces, Settle,
// AnnounceSwitch).
//
// It imports the standard library, domain, events, projections, projections/dockey, the nats.go
// jetstream package (the buckets), xxhash, golang-lru and x/sys; not readapi, webhook nor
// anything under cmd. It reads the clock to date its checkpoints and, on Config.Now, to bound how
// old a change may be to be announced again.
//
// # Invariants
//
//   - Establishments are shared out among Config.Workers workers by a hash of their slug, each
//     worker with its own share of the aggregates, so the records of one establishment are
//     projected in the order of the log by one worker: what is stored, revisions included, is
//     what a projection one record at a time stores.
//   - Position moves past a record only once every record before it is stored; the checkpoint
//     saved in the state bucket never says more than Position.
//   - A Notifier hears of a change only after its bundle is stored, and only when the revision
//     rose or the establishment started or stopped being served (a transition); the change
//     carries whether it is served and the bucket's sequence of the write. A Notifier error is
//     retried until it succeeds: a change stored is never left unannounced, and meanwhile the
//     worker of that establishment waits. With Config.Announcements, a start announces a stored
//     revision, or a transition, whose announcement was lost.
//   - A bundle whose encoded form is larger than Config.MaxValueSize is refused, logged, and the
//     previous bundle stays; a document that is not JSON is refused the same way. Every other
//     failed write is retried until it succeeds or the context ends.
//   - A replay of the whole log stores nothing until it has replayed: then it stores only the
//     bundles that differ from the stored ones, at a revision that never goes back.
//   - The bucket of bundles is a *Bundles, whatever opened it: the projector stores every bundle
//     with the fingerprint of its summary in a header, and a replay compares by the fingerprints
//     alone. Where one is missing (a bundle of an earlier version) or cannot be trusted (a bucket
//     reached through a JetStream domain or API prefix, or one that mirrors another), the replay
//     reads the bundles themselves: the same comparison, at the cost of reading them.
//   - An event that cannot be decoded (unknown type or schema version, malformed payload) is
//     logged and skipped, and the other events of its record still apply; a stored message that
//     is not a record at all is logged and passed over. Neither stops the projection.
package runner
