// Package destination publishes the entries of the changes feed (events.Change) to the
// platforms' own brokers, as CloudEvents 1.0: Kafka, AMQP 0-9-1 (RabbitMQ), NATS and
// PostgreSQL. Each broker is a subpackage whose Open returns a Sink built on a publisher behind
// watermill's message.Publisher interface, with the CloudEvents binding's layout: watermill-sql's,
// and small ones of their own for Kafka (with watermill-kafka's Marshaler), AMQP and NATS (each
// package says why).
//
// It imports the standard library, nats.go's jetstream package, events and webhook (for the
// master keys that seal credentials); the changes feed comes as a function (Feed), so that it
// knows nothing of the projections.
//
// # What it owns
//
//   - The KV bucket Bucket ("DESTINATIONS"): one record per destination, key its id ("dst_" and
//     32 hex digits): its registration (Spec), its credentials (Secrets, as JSON, sealed with the
//     master keys), its position in the changes feed, and the counters its status shows. At most
//     MaxDestinations.
//
// # How a change travels
//
//  1. A destination starting "now" records, at its registration, the end of the change signals
//     as its position; one starting "all" records none, which is a first sync: every
//     establishment's current state, then the changes.
//  2. The process holding the lease "destinations" (its caller takes it) runs a Runner: one
//     goroutine per destination not paused, started and stopped as the bucket changes.
//  3. The goroutine reads the page after its position (at most RunnerConfig.PageSize entries,
//     waiting up to RunnerConfig.Wait when there is none), drops the establishments a filter
//     leaves out, publishes the page's events through the Sink, and only then stores the
//     position after the page. A failure (the broker, the feed, the store) is recorded in the
//     status and the page is tried again after a backoff doubling from MinBackoff to MaxBackoff;
//     the Sink is opened again first.
//  4. A position older than the signals kept (the broker down longer than the changes'
//     retention, or the documents rebuilt) is a gap: counted in the status, and the destination
//     starts a first sync again, so its consumers end with every establishment's state.
//
// # Invariants
//
//   - At least once: a page is published before its position is stored, so a crash or a restart
//     in between publishes it again. Its events then have the same ids (EventID: the entry's
//     establishment, revision, served state and the sequence it was read at); consumers drop
//     duplicates by id.
//   - In revision order per establishment: pages are published one after another, each
//     establishment at most once per page at its newest revision, never going back (the changes
//     feed's own invariant). Kafka keys messages by slug, so an establishment's events stay in
//     one partition.
//   - No goroutine, consumer or timer per establishment: one goroutine per destination, reading
//     the feed with batched direct gets.
//   - Credentials are sealed at rest, opened only to connect, never in a status, an error or a
//     log line.
//
// # Decisions
//
//   - The event: type "establishment.content_updated", source the service's public URL, subject
//     the slug, time when the change was stored, data the feed's entry (event.schema.json).
//     Binary content mode by default (the attributes in the broker's headers under the binding's
//     prefix: "ce_" for Kafka, "cloudEvents_" for AMQP, "ce-" for NATS), structured on request
//     and always for PostgreSQL, whose rows hold the whole event.
//   - Pages of 500 events: large enough that a day change moving 78,000 establishments is 156
//     publications, small enough that a page published again costs little.
//   - Pause keeps the position: resuming publishes what changed meanwhile, within the retention.
//   - Watermill is used for its publishers only. Its router's retries are in memory and its
//     subscribers would add consumers; the position in JetStream and the runner's loop do that
//     job, as for the webhooks.
package destination
