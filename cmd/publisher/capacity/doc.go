// Package capacity keeps the room the process has left: the room of the storage, and the file
// descriptors its listeners share.
//
// A Guard watches the storage and refuses writes while it is short, before the store itself runs
// out. Two readings decide: the free space of the volume the embedded NATS server stores on, and
// JetStream's own count of the bytes it stores against its limit. Writes that grow the log
// without bound (commands, uploads, webhook registrations) are refused once either has less than
// a reserve left; what keeps the service running (leases, checkpoints, the projector's documents,
// the clock's day changes) goes on writing into that reserve. A full volume would make the NATS
// server stop JetStream altogether; a full JetStream limit would refuse the leases too. The
// readings are taken every second, so writes are accepted again as soon as room is made, without a
// restart.
//
// A Budget shares the process's limit of open files: a reserve for the process itself (its NATS
// connections and store, the files it serves, webhook deliveries), then a share for each kind of
// listener, so that a flood of connections to the read API never keeps the process from working
// nor the operator from the admin API. The shares never add up past the limit.
//
// It imports nothing of the service: the readings are functions its caller gives, and so is the
// most the served files hold.
package capacity
