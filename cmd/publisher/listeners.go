package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/readapi"
)

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
func (m *Main) listen(addr string, kind capacity.Listener, name string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	m.serve(ln, kind, name, h)
	return "http://" + ln.Addr().String(), nil
}

// serve serves h on ln, bounded by the listener kind's share of the connections, until Close.
func (m *Main) serve(ln net.Listener, kind capacity.Listener, name string, h http.Handler) *listening {
	lim := readapi.LimitListener(ln, readapi.ConnLimits{
		Total: m.budget.Share(kind), PerClient: m.budget.PerClient, TrustedProxies: m.Config.TrustedProxies,
		Name: name, Logger: m.Logger,
	})
	srv := readapi.NewHTTPServer(ln.Addr().String(), h)
	srv.ConnState = lim.ConnState
	ctx, cancel := context.WithCancel(context.Background())
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	l := &listening{name: name, srv: srv, ln: lim, stopRequests: cancel, done: make(chan struct{})}
	if kind == capacity.ListenerAPI {
		m.reads = l
	} else {
		m.listeners = append(m.listeners, l)
	}
	go func() {
		defer close(l.done)
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.loops.Fatal(fmt.Errorf("http %s: %w", ln.Addr(), err))
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
