// Command scalebench measures the publisher at its users' size on this machine: it generates N
// realistic, varied establishments from a seed, measures the raw JetStream ceilings for messages
// of their size, runs a fresh service (one process with every role on embedded NATS, built from
// this tree), imports them with `publisher import`, and reports each step's figure and its ratio
// to the ceiling it is bound by:
//
//   - import rate (establishments acknowledged per second, end to end) against appends with
//     per-subject optimistic concurrency;
//   - projection lag after the last acknowledgement, and projection throughput against replay;
//   - the service's CPU time per establishment over the import and its projection, and over
//     updates of 10,000 establishments through PUTs from 16 clients at once and their projection;
//   - peak memory of the service, and of an admin-only process serving 5,000 concurrent reads;
//   - data size on disk;
//   - restart-to-ready, and a restart across a day change: time until every date-dependent
//     establishment has started its new local day, and until its documents are served;
//   - a day change at midnight in Paris in a running process (its calendar started a few minutes
//     before it with --calendar-from, long enough for their next days to be prepared): time
//     from midnight until the zone's date-dependent establishments have started their days and
//     until that is projected, and when each whose documents changed was first read through the
//     read API at its new revision, every one of them read in rounds from before midnight;
//   - webhooks: endpoints on a tenth of the establishments, all of them moved by the day change,
//     on an HTTPS receiver on loopback, and how many deliveries each receives after it, and when;
//   - a platform: one platform webhook endpoint, registered before the import, whose deliveries
//     have their signatures checked, and a follower of the changes feed (a first sync after the
//     import, timed against the raw replay rate, then long polls that go on across the
//     restarts); after the import and after the day change, both must hold every establishment
//     at the revision the read API serves (each read back with its key); the endpoint's
//     deliveries are counted, sized and timed against the last change signal stored, and so is
//     the feed's catch-up after the day change;
//   - the documents the mirror holds, and the memory of a process running the api role alone;
//   - `publisher verify` duration and outcome;
//   - publisher rebuild while the service serves: its rendering rate against the replay's, the
//     pause of projection at the switch, and the webhooks it sends (none: the documents are the
//     same);
//   - a replay of the whole log by the projector alone, twice (the store first out of the page
//     cache, then in it), against rendering and compressing every establishment without it.
//
// Usage (from the repository root):
//
//	go run ./cmd/scalebench -n 100000
//
// It needs several gigabytes of memory and disk at 100,000 establishments, and about as many
// minutes; -n 5000 gives a quick look. Nothing it starts outlives it.
//
// # Layout and imports
//
// run calls the phases in turn (phases.go), each a method of bench that prints its figures as it
// goes; the service under test is started and stopped by service.go, measured through its admin
// API and CLI by measures.go and roles.go (its concurrent updates by puts.go, its midnight by
// midnight.go), and its webhooks received by hooks.go (the platform's by follower in follow.go,
// which also keeps what the changes feed gives; platform.go reads the feed, the read API and the
// last change signal, and channels.go checks and times both); raw.go measures the ceilings. Its
// output lines and flags are what the README and scripts read: their wording stays as it is.
//
// It runs the binary built from this tree, and links none of its roles nor readapi: it imports
// the standard library, nats-server and nats.go (for the raw ceilings and the last change
// signal), the Standard Webhooks library (to check signatures), cmd/internal/sample (the
// generator), and domain, events, projections, projections/dockey and webhook for their types and
// defaults (renderOnly renders as the projector does).
package main
