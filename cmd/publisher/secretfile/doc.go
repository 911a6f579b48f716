// Package secretfile reads and writes the files that hold the service's secrets: the admin
// token, the master key of webhook signing secrets, the embedded NATS server's seed, an external
// NATS's password, credentials and TLS key.
//
// A secret file is its owner's alone. Read refuses one whose mode lets its group or others in,
// with ErrOpen and the chmod that fixes it; CreateOnce writes a new one at mode 0600, and never
// replaces one that exists. The package imports the standard library only.
package secretfile
