// Package events stores the event log: it appends the events of each accepted command to NATS
// JetStream and reads them back, for one establishment (Last, Range, History, LastSequence), for
// the whole log (Replay, Follow), or as the headers of every record (FollowNotes). It also keeps
// aggregate snapshots (Snapshots), a cache of the log in a KV bucket, and the audit trail (Audit). The invariants it keeps with
// the other packages are listed under "Architecture and invariants" in the repository's README.
//
// # What it owns
//
//   - The stream StreamName ("CONTENT"), one subject per establishment: "events.<slug>".
//   - The storage format: one message per command, a Record holding the command id, the
//     establishment and its events as Envelopes, encoded as JSON by Encode and checked by Decode.
//   - Optimistic concurrency per establishment and idempotency per command.
//
// Events are opaque to this package: a type string, a schema version and a JSON payload. The
// domain package gives them meaning; events does not import it, nor any other package of this
// module. It imports the standard library, nats.go, its jetstream package and orbit.go's
// jetstreamext (batched direct gets), and goccy/go-json to read and check records faster than
// encoding/json (its answers fuzzed against encoding/json's); no jetstream type appears in its
// API: callers pass a *nats.Conn.
//
// # Invariants
//
//   - Accepted means acknowledged: Append returns a sequence without error only after JetStream
//     acknowledged the record. ErrConflict, ErrInvalidSlug and ErrInvalidRecord mean nothing was
//     stored; any other error (a timeout, a lost connection) leaves the outcome unknown, and the
//     command is retried with the same id.
//   - The message id is the command id. A command appended again within the stream's Duplicates
//     window is stored once; the repeat gets ErrDuplicate and the first record's sequence, even
//     when its expected sequence is stale by then.
//   - Concurrency is optimistic per establishment subject: Append stores a record only if the
//     subject's last sequence is the one the caller read (0 for none); otherwise ErrConflict and
//     nothing is stored. Establishments never conflict with each other.
//   - The log is append-only: the stream denies deletes and purges and has no limits, so no
//     record is ever removed. Sequences increase with every record and are never reused.
//   - Every record read is decoded and checked, carries its stream Sequence, and belongs to the
//     establishment of its subject; a record that fails this is an error, never skipped.
//
// # Decisions
//
//   - One message per command rather than a JetStream atomic batch of one message per event:
//     atomic by construction, one expectation, one message id, and no batch limits. A command's
//     events must fit the server's maximum payload (1 MiB by default).
//   - Slugs are validated by the caller; this package only refuses what cannot be a subject token
//     ('.', '*', '>', white space, control characters, empty), with ErrInvalidSlug.
//   - Command ids are 1 to MaxCommandIDLen visible ASCII characters: they travel as a header. The
//     deduplication table is stream-wide, so command ids must be unique across establishments.
//   - A single server checks the expected sequence before the message id, so a command replayed
//     with a stale expectation is refused as "wrong last sequence" (10071); a replicated stream
//     checks the message id first. To give callers one answer, Append, on a conflict, looks for a
//     record with the same command id among those on the subject stored within the Duplicates
//     window (plus a minute for clock skew), with batched direct gets of at most 1,024 records,
//     and reports ErrDuplicate if it finds one. A conflict thus costs one extra read, usually of
//     a few records; a command further back than that is reported as a conflict, and the
//     caller's retry with a fresh expectation is recognised by JetStream itself.
//   - Both "wrong last sequence" codes, 10071 and, on replicated streams with a write in flight,
//     10164, are ErrConflict. While a replicated stream is still storing the same command id
//     (10158), Append waits briefly and tries again, so the caller learns the stored sequence.
//   - The Duplicates window defaults to one hour (DefaultDuplicates) instead of JetStream's two
//     minutes, so that a client retrying after an outage is still recognised.
//   - Reading one establishment never creates a consumer: Last and LastSequence are one direct get
//     of the subject's last message, Range and History batched direct gets (up to 256 records a
//     request) of the subject's messages, and so is the search for a command after a conflict.
//     Chain reads records back from one of them by sequence, through the previous record each
//     names (the expectation it was appended with, kept as a header): the server finds a
//     sequence in the one block that holds it, where it finds the next message of a subject by
//     matching every block from the last one on, loading those not in memory.
//     Their number is not bounded by the server's consumer limit, and they skip the JetStream API
//     queue. A request brings at most 512 KiB, so that no burst of replies overruns the
//     connection's pending limit. On a cluster any replica may answer a direct get, and one just
//     behind after a leader change answers with an older history: a writer then fails its
//     expected sequence and retries. A read that does not reach the sequence it was asked for is
//     an error, never a shorter history.
//   - Replay and Follow read the whole log with one ordered consumer each, which the server removes
//     10 seconds after its last use; FollowNotes reads headers only through one durable consumer
//     shared by every process that names it. History and Replay stop at the last record stored
//     when they are called; Follow and FollowNotes go on. A Follow whose consumer delivers
//     nothing for 3 s while records wait (lost with a cluster node, and not made again yet)
//     ends with ErrStalled, and its caller follows again at once.
//   - Decode ignores unknown fields, so that records written by a newer version remain readable,
//     and returns payloads compacted; Encode writes them without HTML escaping. Decode(Encode(r))
//     is r. A null payload is refused, as it usually means an event lost its body.
//
// # Record headers
//
// A writer may attach small facts to a record as message headers (WithHeader); FollowNotes reads
// them without the record's body, so that a derived index of every establishment can be kept at
// the cost of a few bytes a record.
//
// # Snapshots
//
// The KV bucket AGGREGATES holds, per establishment, a state folded from its records up to one
// of them, with that record's sequence and command id and the format of the state. This package
// stores it as opaque bytes; the writer decides what a state is and when one is usable. The
// bucket compresses values at rest and drops nothing but what a newer snapshot replaces.
//
// # Change signals
//
// The stream SIGNALS (subjects signals.<slug>) carries one Signal per rise of an establishment's
// content_revision: the slug, the new revision and the resources whose documents changed, whether
// the read API serves it, and the sequence of the bundle write in its bucket. It also carries a
// transition when an establishment starts or stops being served without such a rise (its API
// enabled or disabled, a move to draft). The projector publishes a signal only after every
// document of that revision is stored, with the message id "<slug>:<revision>" (a transition's
// adds its kind and bundle sequence), so a projector that publishes again after a restart adds
// nothing. Signals are kept seven days unless OpenSignalsFor sets another retention.
//
// The webhook dispatcher consumes them. Changes reads them as the changes feed does, with batched
// direct gets from a position: one entry per establishment (Change), merged, in pages. A Cursor
// is a position of that feed, in its first sync (a read of the bucket of bundles) or after it,
// written as an opaque text for clients.
//
// # The audit trail
//
// The stream AUDIT (subjects audit.<slug>) keeps who gave each accepted command, one opaque entry
// per command, the last AuditConfig.Keep of each establishment; Read pages an establishment's
// newest first. It is a view beside the log, not the log: Audit.Append sends an entry without
// waiting for its acknowledgement (a refusal is told to AuditConfig.Failed), unlike Append, whose
// invariants above are the log's.
package events
