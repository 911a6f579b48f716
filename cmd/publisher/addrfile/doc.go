// Package addrfile keeps, in the data directory, the addresses a running serve listens on, so
// that the other commands given the same --data-dir (admin, import, verify, rebuild) reach it
// without being told where: NATS names the embedded NATS server's client URL, Admin the admin
// API's base URL.
//
// A file holds one URL, as a client on this machine reaches it (a wildcard host becomes the
// loopback address of its family). It is written whole, aside and then renamed, so that a reader
// never sees half of one, once the listener is bound, and removed when the listener closes; a
// serve killed without closing leaves it behind, and the command that reads it then fails to
// connect and says which file it read.
//
// It imports the standard library only.
package addrfile
