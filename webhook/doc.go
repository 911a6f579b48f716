// Package webhook delivers the establishment.content_updated webhook: it consumes the change
// signals the projector publishes (events.Signal), merges each establishment's changes within a
// debounce window, and POSTs one signed delivery per window to every enabled endpoint of the
// establishment, with retries, a delivery log and an endpoint registry. Platform endpoints
// receive the changes of many establishments in batches (see Platform endpoints). The invariants it keeps
// with the other packages are listed under "Architecture and invariants" in the repository's
// README.
//
// It imports the standard library, nats.go, nats.go's jetstream package and this module's events
// package (for the signal stream and envelope), nothing else. No jetstream type appears in its
// API: callers pass a *nats.Conn and plain strings.
//
// # What it owns
//
//   - The durable consumer "webhook" on events.SignalStreamName.
//   - The stream StreamName ("WEBHOOK", a work queue): the open window of each establishment,
//     a scheduled message on "webhook.window.<slug>"; the signals it gathers, one message each on
//     "webhook.pending.<slug>"; and closed windows, fired by the schedule on "webhook.due.<slug>".
//   - The stream QueueStreamName ("WEBHOOK_QUEUE"): deliveries to attempt, one subject per
//     endpoint, "webhook.task.<slug>.<endpoint>", keeping one message per subject; and manual
//     redeliveries on "webhook.manual.<slug>.<endpoint>.<delivery>".
//   - The KV bucket EndpointsBucket ("WEBHOOKS"): endpoints with their URL, signing secrets and
//     delivery state, key "<slug>.<endpoint id>". Signing secrets are stored here only: never in
//     the event log, a delivery record, a log line or anything JSON-encoded for operators.
//   - The KV bucket DeliveriesBucket ("WEBHOOK_DELIVERIES"): the delivery log, one record per
//     delivery, key "<endpoint id>.<delivery id>", kept Config.LogRetention (30 days).
//
// # How a change travels
//
//  1. A signal arrives. A transition (events.Signal.Transition: the establishment started or
//     stopped being served without a new revision) is acknowledged and passed over: this webhook
//     announces revisions. The dispatcher appends any other signal to the establishment's pending
//     signals and opens a window unless one is open: a scheduled message created only when the
//     window subject is empty (expected last sequence 0), firing at now+Window.
//  2. At the window's end, JetStream fires the schedule as a message on the due subject, purging
//     the schedule in the same step; a signal that comes after it opens the next window.
//  3. The closed window reads the pending signals (newest revision, union of resources) and is
//     fanned out: one delivery per enabled endpoint, queued on the endpoint's subject with a
//     message id derived from the window message and the last signal read, so that handling a
//     window twice queues nothing twice. Only then are the signals read dropped; signals that came
//     meanwhile, or beyond the 5,000 one window reads, stay for the next window, which is opened
//     if none is.
//  4. A dispatcher takes the delivery, makes one attempt and records it. On a 2xx the delivery
//     is acknowledged. On a failure it is negatively acknowledged with the backoff as delay:
//     JetStream, not memory, holds the retry. After MaxAttempts, or on 410 Gone, it is
//     terminated.
//
// Every step is a JetStream message acknowledged only after its effect is stored, so a crash or
// a restart of any dispatcher, or of the NATS server, loses no open window and no pending retry;
// the next dispatcher carries on, on schedule. Several dispatchers share the same durable
// consumers: a message is worked on by one dispatcher at a time, and a window or a delivery is
// never handled concurrently by two. With replicas, a step reads the WEBHOOK and WEBHOOK_QUEUE
// streams from their leaders (no direct gets, which a replica behind may answer; the buckets'
// records, written by compare-and-set, are read as their client reads them), and a request whose
// reply was lost with a server fails after its own timeout (5 s), not the whole step's, so the
// step is tried again on the servers left within seconds.
//
// # Invariants
//
//   - One delivery per endpoint per window, listing the newest revision of the window and the
//     union of its changed resources.
//   - A receiver learns everything that changed since it last answered 2xx: a delivery lists,
//     besides its window's resources, those of the endpoint's delivery it supersedes and those
//     it missed (the endpoint's MissedResources): deliveries given up or refused with 410, and
//     windows closed while it was disabled. A success clears them. Enabling an endpoint that
//     missed changes queues a delivery of them at once.
//   - The body of a delivery is fixed when it is queued: every attempt and every manual
//     redelivery sends the same bytes with the same id. Only the signature headers change, as
//     they carry the attempt's time.
//   - A receiver is only ever connected to on an address the policy allows: the check runs on
//     the resolved address of every connection, not only at registration, so a host re-pointed
//     to a private address afterwards (DNS rebinding) is refused. No proxy is used, as it would
//     hide the address.
//   - Delivery is at least once. A dispatcher that stops between a 2xx and recording it sends
//     the delivery again, with the same id: receivers drop duplicates by webhook-id.
//   - A dispatcher sends one attempt at a time to an endpoint: a newer delivery queued while an
//     older one is being sent waits for it to end, so a receiver served by one dispatcher never
//     gets an older revision after a newer one. With several dispatchers, two attempts to one
//     endpoint may still overlap for the length of one attempt.
//
// # Platform endpoints
//
// A platform endpoint (CreatePlatform) receives the changes of every establishment, or of a
// list, in batches (PlatformPayload, event EventEstablishmentsUpdated). Its record, under the
// scope PlatformScope where an establishment's slug stands for the others, holds its position
// in the signal stream: the last signal it acknowledged (a cursor), and the last signal of the
// last platform window closed (its target). There is one platform window for the whole service,
// a scheduled message like an establishment's, opened by the first signal after it closed (a
// dispatcher remembers it open, so most signals cost no request). At its close each enabled
// platform endpoint with nothing queued queues its next batch: events.Signals.Changes from its
// cursor up to the target, merged per establishment, at most Config.PlatformBatch
// establishments and about Config.PlatformBatchBytes. One batch is queued at a time per
// endpoint; a 2xx moves the cursor to the batch's end and queues the next at once, so a large
// change goes out as back-to-back batches; giving up, or a 410, leaves the cursor, and the next
// batch carries those changes again with newer ones: revisions never go back. A cursor older
// than the signals kept jumps to the first signal kept, and that delivery says so (gap). Redeliver
// takes only the endpoint's latest batch (ErrNotLatest). The queue, the delivery log, the
// secrets, the address policy and the retries are the establishments' endpoints' own.
//
// # The request
//
// A POST to the endpoint's URL with Content-Type application/json, the body a Payload (schema in
// payload.schema.json), and these headers, where <t> is the attempt's Unix time in seconds and
// <key> the secret's bytes (the base64 after "whsec_", decoded):
//
//	X-Service-Signature: t=<t>,v1=<hex(HMAC-SHA256(key, "<t>." + body))>
//	webhook-id:          <delivery id, e.g. msg_0d234cd64e66ac00c4177ef70dd73fb9>
//	webhook-timestamp:   <t>
//	webhook-signature:   v1,<base64(HMAC-SHA256(key, "<webhook-id>.<t>." + body))>
//
// X-Service-Signature is the specification's header; the three others follow the Standard
// Webhooks specification, so receivers may verify with its libraries instead. During a secret
// rotation's grace period both secrets sign: X-Service-Signature carries two v1 values and
// webhook-signature two space-separated entries, the new secret's first. Receivers accept a
// request if any one verifies, compare in constant time, and refuse a <t> more than a few
// minutes from their clock, which defeats replays.
//
// # Decisions on what the specification leaves open
//
//   - Payload: {"id", "type", "timestamp", "data": {"establishment", "content_revision",
//     "resources"}}, the envelope of the Standard Webhooks specification. "resources" names what
//     to re-read: "establishment", "hours", "menus", "menus/<menu_type_slug>" (a menu type that
//     disappeared is listed too: its detail now answers 404), "jsonld", in that order.
//   - Debounce: a fixed window of Config.Window (30 s) from the first change the dispatcher
//     takes, not a sliding one, so a stream of changes still yields a delivery per window. The
//     window is timed by the NATS server's clock; the dispatcher sets its end from its own
//     clock, so their skew shifts the window.
//   - Retries: MaxAttempts (5) attempts; waits of 10 s, 30 s, 2 min and 10 min between them,
//     each ±20 % (about 13 minutes in all). A Retry-After header on 429 or 503, in seconds or as
//     an HTTP date, lengthens the wait up to Config.MaxRetryAfter (1 h), never shortens it.
//     Every other non-2xx status, a redirect (never followed), a timeout (Config.Timeout, 10 s,
//     per attempt) or a connection failure is retried; 410 Gone disables the endpoint at once.
//   - Supersede: a newer delivery to an endpoint replaces an older one still queued or
//     retrying; the older one is logged "superseded" and its resources carried over.
//   - Registration: an https URL, no user information or fragment, whose host is or resolves to
//     public addresses only, unless Config.AllowPrivate or Config.AllowedNetworks allow it (a
//     refusal ends with Config.AllowHint, which says how the operator allows one); the
//     caller generates the id and the secret. Registering an id again replaces its URL and
//     secret and enables it. A disabled endpoint is enabled again by Enable or by registering
//     it again; changes made while it was disabled are not replayed (its receiver re-reads
//     everything once).
//   - Operations: Ping sends a one-off "webhook.ping" delivery and returns its attempt;
//     Redeliver re-sends a finished delivery (same id and body) with a new series of attempts;
//     DeliveryLog lists an endpoint's deliveries, newest first; Stats counts open windows,
//     pending deliveries, failing endpoints and those with missed changes.
//
// # Why these mechanisms
//
// The window is a JetStream scheduled message rather than a timer in memory: it survives any
// restart without a recovery scan and fires once even with several dispatchers. Its signals are
// messages of their own, appended and never rewritten: a merged state kept in the schedule's body
// and replaced at each change could be replaced between the server copying it into the due
// message and purging the schedule, which would lose that change. Retries are negative acknowledgements
// with a delay for the same reasons. The queue keeps one message per endpoint, which makes
// superseding a property of the stream: publishing the newer delivery drops the older one, even
// from the consumer's pending retries. Watermill is not used: its retry middleware retries in
// memory, blocking a worker for minutes and forgetting attempts on a crash, and its NATS
// adapter would add ephemeral consumers and connection ownership that this design does not
// want; plain durable consumers on the jetstream package do the job. Watermill's publishers
// serve the broker destinations (package destination), which publish the same changes into a
// platform's own broker.
package webhook
