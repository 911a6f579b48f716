package listeners

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/readapi"
)

// Config is what the listeners need from the process.
type Config struct {
	// Budget shares the process's file descriptors between the listeners.
	Budget capacity.Budget
	// TrustedProxies are the proxies whose clients are counted by their forwarded address.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
	// Fatal hears that a listener stopped serving, which the process cannot go on without.
	Fatal func(error)
}

// Set is the process's listeners. Its listeners are added while the process starts, before any
// of its methods is called from another goroutine.
type Set struct {
	cfg    Config
	reads  *listening   // the read API's, closed last
	others []*listening // the admin API's and the metrics'
	// bound are the listeners bound and not served yet, by kind.
	bound map[capacity.Listener]bound
	// starting answers on the read API's listener until it is ready; waiting is what the process
	// waits for meanwhile, nil when nothing.
	starting *startingHandler
	waiting  atomic.Pointer[string]
}

// New returns a set with no listener yet.
func New(cfg Config) *Set { return &Set{cfg: cfg} }

// Budget is the share of the file descriptors the set was given.
func (s *Set) Budget() capacity.Budget { return s.cfg.Budget }

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

// bound is a listener bound and not served yet, and its name.
type bound struct {
	ln   net.Listener
	name string
}

// Bind binds the listener of kind, named name, on addr, and returns its base URL. The process binds
// every listener before it starts anything else, so that an address in use fails the start at once;
// Serve serves it once its handler is ready, and connections wait in the backlog until then.
func (s *Set) Bind(addr string, kind capacity.Listener, name string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	if s.bound == nil {
		s.bound = map[capacity.Listener]bound{}
	}
	s.bound[kind] = bound{ln, name}
	return "http://" + ln.Addr().String(), nil
}

// Serve serves h on the listener bound for kind, bounded by the kind's share of the connections,
// and returns its base URL; "" when none was bound for kind.
func (s *Set) Serve(kind capacity.Listener, h http.Handler) string {
	b, ok := s.bound[kind]
	if !ok {
		return ""
	}
	delete(s.bound, kind)
	l := s.serve(b.ln, kind, b.name, h)
	if kind == capacity.ListenerAPI {
		s.reads = l
	} else {
		s.others = append(s.others, l)
	}
	return "http://" + b.ln.Addr().String()
}

// serve serves h on ln, bounded by the listener kind's share of the connections, until shut down.
func (s *Set) serve(ln net.Listener, kind capacity.Listener, name string, h http.Handler) *listening {
	lim := readapi.LimitListener(ln, readapi.ConnLimits{
		Total: s.cfg.Budget.Share(kind), PerClient: s.cfg.Budget.PerClient, TrustedProxies: s.cfg.TrustedProxies,
		Name: name, Logger: s.cfg.Logger,
	})
	srv := readapi.NewHTTPServer(ln.Addr().String(), h)
	srv.ConnState = lim.ConnState
	ctx, cancel := context.WithCancel(context.Background())
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	l := &listening{name: name, srv: srv, ln: lim, stopRequests: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Fatal(fmt.Errorf("http %s: %w", ln.Addr(), err))
		}
	}()
	return l
}

// Stats returns each listener's connection counts, by name.
func (s *Set) Stats() iter.Seq2[string, readapi.ConnStats] {
	return func(yield func(string, readapi.ConnStats) bool) {
		for _, l := range append([]*listening{s.reads}, s.others...) {
			if l != nil && !yield(l.name, l.ln.Stats()) {
				return
			}
		}
	}
}

// Shutdown bounds: requests in flight get shutdownGrace to finish, then their contexts end, and
// shutdownForce later the connections are closed.
const (
	shutdownGrace = 5 * time.Second
	shutdownForce = time.Second
)

// Shutdown stops every listener but the read API's, at once, and closes those never served.
func (s *Set) Shutdown() {
	for kind, b := range s.bound {
		b.ln.Close()
		delete(s.bound, kind)
	}
	var wg sync.WaitGroup
	for _, l := range s.others {
		wg.Go(l.shutdown)
	}
	wg.Wait()
}

// ShutdownAPI stops the read API's listener, if any.
func (s *Set) ShutdownAPI() {
	if s.reads != nil {
		s.reads.shutdown()
	}
}

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
