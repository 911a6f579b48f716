// Package node is the NATS this process talks to: the embedded server it starts, or the external
// cluster it connects to, and its connections to either.
//
// Start starts the embedded server, on the data directory, or connects to the configured servers.
// The embedded server's start fails at once, never after a wait, when its client address is in use
// (the error names the address, the cause and the flags that avoid it) or when the server reports
// a failure while starting, which its own logger would end the process with; the server is then
// stopped and nothing of it is left running.
// The embedded server accepts one nkey user, whose seed only the process's user can read; an
// external NATS gets the credentials and TLS settings of Auth, never only those of its URL, and
// its URL is logged with no credential in it. Each role that moves megabytes (the documents
// mirror, the webhook dispatcher) dials a connection of its own, closed by Close with the shared
// one. A role hears through OnReconnect that its watches must start again: after a reconnection
// to an external NATS, or after the embedded server's JetStream started again.
//
// Provision opens what the roles use (streams, buckets) again and again while an external
// cluster is away or forming, and gives up at once on what waiting cannot mend; other packages
// receive it as a function value. Storage reads what the stores hold for the capacity guard, and
// starts the embedded server's JetStream again, once the volume has room, to load the streams
// that stopped writing when it ran out.
//
// It reports through what it is given, a *slog.Logger and a function that hears what it waits
// for, and imports nats-server, nats.go, events (its sleep), capacity and secretfile; nothing of the
// service's roles. Client is how the other commands (verify, rebuild) reach the service's NATS:
// the embedded server records the address of its client listener in the data directory while it
// runs, and Client, given no URL, connects there as the embedded server's user.
package node
