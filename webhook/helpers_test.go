package webhook_test

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats-server/v2/server/ats"
	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// inBubble runs f in a testing/synctest bubble, where time is fake and jumps ahead whenever
// every goroutine of the bubble waits. NATS servers and dispatchers started inside run on that
// clock too: scheduled messages, negative acknowledgements with a delay and HTTP timeouts.
//
// One thing inside nats-server escapes the bubble: the file store reads a process-wide clock
// (package ats) that a shared goroutine refreshes. Started in the test's bubble, that goroutine
// would keep the fake clock from advancing (it also waits on a channel made outside); started
// outside, it would tell real time, decades after the bubble's, and the store would expire every
// message of a stream with a MaxAge. So it is started in a second bubble whose clock never moves:
// the store then reads the start of fake time, which only ever lags the test's clock.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	registered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		synctest.Test(t, func(*testing.T) {
			ats.Register()
			close(registered)
			<-release // not a durable wait: this bubble's clock stays put
			ats.Unregister()
		})
	}()
	<-registered
	defer func() {
		close(release)
		<-done
	}()
	synctest.Test(t, f)
}

// startNATS runs a JetStream server storing in dir, reachable only in process: inside a bubble,
// a TCP listener would never let the fake clock advance. It stops when the test ends.
func startNATS(tb testing.TB, dir string) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		DontListen: true,
	})
	if err != nil {
		tb.Fatalf("new nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		tb.Fatalf("nats server not ready")
	}
	tb.Cleanup(func() { stopNATS(s) })
	return s
}

func stopNATS(s *server.Server) {
	s.Shutdown()
	s.WaitForShutdown()
}

// connect opens an in-process connection to s, closed when the test ends.
func connect(tb testing.TB, s *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.MaxReconnects(0))
	if err != nil {
		tb.Fatalf("connect to nats: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is an HTTPS server that records requests and answers with respond(n), n counting
// requests from 1. It must be started outside the bubble: its accept loop waits on the network.
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	reqs    []received                         // guarded by mu
	respond func(n int, w http.ResponseWriter) // guarded by mu
}

func newReceiver(tb testing.TB, respond func(n int, w http.ResponseWriter)) *receiver {
	tb.Helper()
	r := &receiver{respond: respond}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{Header: req.Header.Clone(), Body: body})
		n, respond := len(r.reqs), r.respond
		r.mu.Unlock()
		// Each request on a fresh connection: an idle keep-alive connection waits on the
		// network and would hold the bubble's clock.
		w.Header().Set("Connection", "close")
		if respond == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		respond(n, w)
	}))
	tb.Cleanup(r.srv.Close)
	return r
}

// status answers every request with code.
func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// url returns the receiver's URL with path appended.
func (r *receiver) url(path string) string { return r.srv.URL + path }

// testConfig trusts the test certificate, allows 127.0.0.1, where receivers listen, and logs
// to the test's output.
func testConfig(tb testing.TB, r *receiver) webhook.Config {
	pool := x509.NewCertPool()
	pool.AddCert(r.srv.Certificate())
	return webhook.Config{
		MasterKeys:      testMasterKeys(tb),
		RootCAs:         pool,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Logger:          slog.New(slog.NewTextHandler(tb.Output(), nil)),
	}
}

// openDispatcher opens a dispatcher closed when the test ends.
func openDispatcher(tb testing.TB, nc *nats.Conn, cfg webhook.Config) *webhook.Dispatcher {
	tb.Helper()
	if cfg.MasterKeys == nil {
		cfg.MasterKeys = testMasterKeys(tb)
	}
	d, err := webhook.Open(tb.Context(), nc, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(d.Close)
	return d
}

// run runs d until the returned stop is called or the test ends.
func run(tb testing.TB, d *webhook.Dispatcher) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			tb.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	tb.Cleanup(stop)
	return stop
}

// openSignals opens the signal stream for publishing.
func openSignals(tb testing.TB, nc *nats.Conn) *events.Signals {
	tb.Helper()
	s, err := events.OpenSignals(tb.Context(), nc, 1)
	if err != nil {
		tb.Fatalf("OpenSignals: %v", err)
	}
	return s
}

func publish(tb testing.TB, s *events.Signals, slug string, revision int64, resources ...string) {
	tb.Helper()
	err := s.Publish(tb.Context(), events.Signal{Establishment: slug, Revision: revision, Resources: resources, Time: time.Now()})
	if err != nil {
		tb.Fatalf("Publish(%s, %d): %v", slug, revision, err)
	}
}

// Secrets used by the tests: "whsec_" and the base64 of 32 bytes.
const (
	secretA = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
	secretB = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
)

func register(tb testing.TB, d *webhook.Dispatcher, slug, id, url, secret string) {
	tb.Helper()
	if err := d.Registry().Register(tb.Context(), slug, id, url, secret); err != nil {
		tb.Fatalf("Register(%s, %s, %s): %v", slug, id, url, err)
	}
}

// sleepUntil sleeps on the bubble's clock until start+d, then waits for every goroutine of the
// bubble to settle.
func sleepUntil(start time.Time, d time.Duration) {
	time.Sleep(time.Until(start.Add(d)))
	synctest.Wait()
}

// runWithEndpoint starts a NATS server storing in dir and a dispatcher with cfg on it, registers
// rcv's root as endpoint "wh_a" of chez-marcel, and runs the dispatcher until the test ends. It
// returns the dispatcher and the signal stream to publish changes on.
func runWithEndpoint(t *testing.T, dir string, cfg webhook.Config, rcv *receiver) (*webhook.Dispatcher, *events.Signals) {
	t.Helper()
	nc := connect(t, startNATS(t, dir))
	d := openDispatcher(t, nc, cfg)
	register(t, d, "chez-marcel", "wh_a", rcv.url("/"), secretA)
	sigs := openSignals(t, nc)
	run(t, d)
	return d, sigs
}

// testMasterKeys returns the master key of every dispatcher of the tests, as the processes of a
// deployment share theirs.
func testMasterKeys(tb testing.TB) *webhook.MasterKeys {
	tb.Helper()
	mk, err := webhook.ParseMasterKeys([]byte(testMasterKey))
	if err != nil {
		tb.Fatal(err)
	}
	return mk
}

var testMasterKey = webhook.NewMasterKey()
