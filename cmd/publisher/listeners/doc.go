// Package listeners is the process's HTTP listeners: the read API's, the admin API's and the
// metrics'.
//
// Each listener holds at most its kind's share of the process's file descriptors
// (capacity.Budget), and as many per client address, through readapi's limiting listener. Every
// listener is bound (Bind) before anything else of the process starts, so that an address in use
// fails the start at once, and served (Serve) once its handler is ready. The read API's answers
// at once, so that the URLs of uploaded files name the port it got: until the read API is ready it
// answers /healthz 200 and everything else 503, with what the process waits for in the header
// Waiting-For.
//
// Shutdown stops the admin and metrics listeners, and closes those never served; ShutdownAPI the
// read API's, which the process closes last so that reads are answered until the end. Neither
// waits unbounded: requests in flight get shutdownGrace, then their contexts end, and
// shutdownForce later the connections are closed. A listener that stops serving is reported to the Fatal function it was given.
//
// It imports capacity and readapi (its limiting listener and server timeouts), nothing of the
// roles it serves.
package listeners
