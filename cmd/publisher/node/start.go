package node

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startLimit bounds the wait for the embedded server to accept connections: it recovers its
// stores first, which takes a while on a large one.
const startLimit = 30 * time.Second

// listenHint is what the error of a busy --nats-listen address says to do.
const listenHint = "set another address with --nats-listen, port -1 for any free one, or use the NATS running there with --nats-url"

// checkListen binds the embedded server's client address and lets it go, so that an address in
// use fails the start at once, naming the address and the cause, before the server recovers its
// stores. Port 0 is the server's default port; -1 picks a free one, which needs no check.
func checkListen(host string, port int) error {
	if port < 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cmp.Or(port, server.DEFAULT_PORT))))
	if err != nil {
		return fmt.Errorf("embedded nats: %w (%s)", err, listenHint)
	}
	return ln.Close()
}

// run starts s and returns once it accepts connections, or with the first failure it reports
// while starting (a listener taken since checkListen, a JetStream it cannot enable), s stopped
// and its start returned: nothing of it is left behind.
func run(s *server.Server, log *serverLog) error {
	started := make(chan struct{})
	go func() {
		defer close(started)
		s.Start()
	}()
	err := awaitReady(s, log.failure)
	if err == nil {
		log.running()
		return nil
	}
	s.Shutdown()
	s.WaitForShutdown()
	<-started
	return err
}

// awaitReady polls s until it accepts connections, it reports a failure, or startLimit passes.
func awaitReady(s *server.Server, failure <-chan string) error {
	deadline := time.Now().Add(startLimit)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		select {
		case msg := <-failure:
			return fmt.Errorf("embedded nats did not start: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded nats did not accept connections within %s", startLimit)
		}
	}
	return nil
}

// serverLog is the embedded server's logger. The server reports a failure to start with
// Fatalf, which its own logger ends the process with: this one hands the first to run, which
// stops the server and returns it, and logs a later one as an error. It passes the server's
// notices, warnings and errors to the service's logger when debugging, and drops them otherwise.
type serverLog struct {
	log     *slog.Logger
	debug   bool
	failure chan string // the first failure while the server starts

	mu      sync.Mutex
	started bool
}

func newServerLog(log *slog.Logger, debug bool) *serverLog {
	return &serverLog{log: log, debug: debug, failure: make(chan string, 1)}
}

// running says the server started: a failure from now on is logged.
func (l *serverLog) running() {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
}

func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		l.log.Error("embedded nats: " + msg)
		return
	}
	select {
	case l.failure <- msg:
	default:
	}
}

func (l *serverLog) Noticef(format string, v ...any) { l.print(slog.LevelInfo, format, v) }
func (l *serverLog) Warnf(format string, v ...any)   { l.print(slog.LevelWarn, format, v) }
func (l *serverLog) Errorf(format string, v ...any)  { l.print(slog.LevelError, format, v) }
func (l *serverLog) Debugf(format string, v ...any)  { l.print(slog.LevelDebug, format, v) }
func (l *serverLog) Tracef(format string, v ...any)  { l.print(slog.LevelDebug, format, v) }

func (l *serverLog) print(level slog.Level, format string, v []any) {
	if l.debug {
		l.log.Log(context.Background(), level, "embedded nats: "+fmt.Sprintf(format, v...))
	}
}
