package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/opencarte/publisher/readapi"
)

// The process's file descriptors: the listeners share what is left once a reserve is kept for
// the process itself (its NATS connections and store, the files it serves, webhook deliveries), so
// that a flood of connections never keeps it from working.
const (
	minReserveFDs = 256
	maxReserveFDs = 4096
	// The admin API and the metrics listener get their own small shares, so that a flood of the
	// read API leaves the operator a way in.
	adminConns   = 1024
	metricsConns = 64
	// maxAPIConns caps the read API's share whatever the open file limit: each connection costs
	// its goroutine and buffers, some 20 KiB, and a flood from many addresses must not make the
	// process run out of memory instead (16,384 connections: about 320 MiB).
	maxAPIConns = 16384
	// DefaultConnsPerClient is how many connections one client address may hold on a listener.
	DefaultConnsPerClient = 256
)

// Listener kinds, whose shares of the descriptors differ.
const (
	listenerAPI = iota
	listenerAdmin
	listenerMetrics
)

// connBudget is how many connections each listener may hold, from the process's limit of open
// files: a reserve (a quarter, from minReserveFDs to maxReserveFDs) for the process itself, half
// of which at most for the files the read API keeps in memory files, then a share for the admin
// API and the metrics, and the rest for the read API, at most maxAPIConns. total, when positive,
// sets the read API's share within what the limit leaves (--max-connections).
type connBudget struct {
	fdLimit, reserve    int
	api, admin, metrics int
	perClient           int
	// files is what of the reserve the files the read API serves may hold (memory files), half
	// of it at most.
	files int
}

func newConnBudget(fdLimit uint64, total, perClient int) connBudget {
	limit := int(min(fdLimit, 1<<30))
	b := connBudget{fdLimit: limit, perClient: perClient}
	b.reserve = min(max(limit/4, minReserveFDs), maxReserveFDs)
	b.files = min(readapi.DefaultFileDescriptors, b.reserve/2)
	avail := max(limit-b.reserve, 16)
	b.admin = max(min(adminConns, avail/8), 2)
	b.metrics = max(min(metricsConns, avail/16), 1)
	b.api = max(avail-b.admin-b.metrics, 4)
	if total > 0 {
		b.api = min(b.api, total)
	} else {
		b.api = min(b.api, maxAPIConns)
	}
	if b.perClient <= 0 {
		b.perClient = DefaultConnsPerClient
	}
	return b
}

func (b connBudget) share(kind int) int {
	switch kind {
	case listenerAdmin:
		return b.admin
	case listenerMetrics:
		return b.metrics
	}
	return b.api
}

// openFileLimit returns the process's limit of open files. The Go runtime raised it to the hard
// limit at start, as servers do.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return rl.Cur
}

// listening is one HTTP listener of the process.
type listening struct {
	name string
	srv  *http.Server
	ln   *readapi.Listener
	// stopRequests ends the contexts of the requests in flight, for a shutdown that cannot wait
	// for them.
	stopRequests context.CancelFunc
	done         chan struct{}
}

// listen serves h on addr and returns its base URL.
func (m *Main) listen(addr string, kind int, name string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	m.serve(ln, kind, name, h)
	return "http://" + ln.Addr().String(), nil
}

// serve serves h on ln, bounded by the listener kind's share of the connections, until Close.
func (m *Main) serve(ln net.Listener, kind int, name string, h http.Handler) *listening {
	lim := readapi.LimitListener(ln, readapi.ConnLimits{
		Total: m.budget.share(kind), PerClient: m.budget.perClient, TrustedProxies: m.Config.TrustedProxies,
		Name: name, Logger: m.Logger,
	})
	srv := readapi.NewHTTPServer(ln.Addr().String(), h)
	srv.ConnState = lim.ConnState
	ctx, cancel := context.WithCancel(context.Background())
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	l := &listening{name: name, srv: srv, ln: lim, stopRequests: cancel, done: make(chan struct{})}
	if kind == listenerAPI {
		m.reads = l
	} else {
		m.listeners = append(m.listeners, l)
	}
	go func() {
		defer close(l.done)
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("http %s: %w", ln.Addr(), err)
		}
	}()
	return l
}

// Shutdown bounds: requests in flight get shutdownGrace to finish, then their contexts end, and
// shutdownForce later the connections are closed.
const (
	shutdownGrace = 5 * time.Second
	shutdownForce = time.Second
	// rolesStopWait bounds the wait for the roles to stop once asked.
	rolesStopWait = 15 * time.Second
)

// shutdown stops l: no new connection, requests in flight finished within shutdownGrace, then
// told to stop (a request waiting for the event log returns), then closed.
func (l *listening) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	err := l.srv.Shutdown(ctx)
	cancel()
	if err != nil {
		l.stopRequests()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownForce)
		_ = l.srv.Shutdown(ctx)
		cancel()
		_ = l.srv.Close()
	}
	l.stopRequests()
	<-l.done
}
