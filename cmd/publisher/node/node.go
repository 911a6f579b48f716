package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/opencarte/publisher/cmd/publisher/addrfile"
)

// Config is what Start needs.
type Config struct {
	// URL lists the servers of an external NATS; empty starts the embedded server.
	URL  string
	Auth Auth // credentials and TLS for URL

	// Listen is the embedded server's client listener, host:port; port -1 picks one.
	Listen string
	// DataDir holds the embedded server's seed file and store.
	DataDir string
	// SyncAlways has the embedded server fsync every write.
	SyncAlways bool
	// MaxStore is the embedded server's limit of stored bytes; 0: none of its own.
	MaxStore int64
	// Debug has the embedded server log.
	Debug bool

	// Logger hears of connections lost and made, and of what provisioning waits for. Required.
	Logger *slog.Logger
	// Waiting, optional, hears what provisioning waits for, and "" once it waits no more.
	Waiting func(what string)
}

// Node is the NATS the process talks to, and its connections. Its zero value is not usable; see
// Start.
type Node struct {
	cfg    Config
	server *server.Server // nil with an external NATS
	conn   *nats.Conn
	// user signs the embedded server's challenge; options carry the credentials and TLS of an
	// external NATS.
	user    nats.Option
	options []nats.Option
	// opts are the embedded server's, which its JetStream starts again from.
	opts *server.Options

	mu    sync.Mutex
	roles []*nats.Conn // the roles' own connections
	// restarted are called once the embedded server's JetStream started again.
	restarted []func()
}

// Start starts the embedded NATS server unless a URL is configured, and connects to NATS. An
// external NATS may not accept connections yet: the connection is made in the background, and
// AwaitConnection waits for it.
func Start(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		return nil, errors.New("node: config needs a logger")
	}
	n := &Node{cfg: cfg}
	if cfg.URL != "" {
		var err error
		if n.options, err = cfg.Auth.options(); err != nil {
			return nil, err
		}
	} else if err := n.startEmbedded(); err != nil {
		return nil, err
	}
	nc, err := n.dial("publisher")
	if err != nil {
		n.Close()
		return nil, err
	}
	n.conn = nc
	return n, nil
}

// startEmbedded starts the embedded server, which accepts one nkey user.
func (n *Node) startEmbedded() error {
	c := &n.cfg
	host, portText, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("--nats-listen %q: %w", c.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--nats-listen %q: bad port", c.Listen)
	}
	if err := checkListen(host, port); err != nil {
		return err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	// No connection is anonymous, not even a local one: the server accepts one nkey user, whose
	// seed only this process's user can read.
	_, user, err := embeddedUser(c.DataDir)
	if err != nil {
		return fmt.Errorf("embedded nats user: %w", err)
	}
	users, err := embeddedUsers(user)
	if err != nil {
		return err
	}
	if n.user, err = nkeyOption(user); err != nil {
		return err
	}
	opts := &server.Options{
		Nkeys:      users,
		ServerName: "publisher",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(c.DataDir, "nats"),
		SyncAlways: c.SyncAlways,
		NoSigs:     true,
		MaxPayload: 8 << 20,
		// An explicit limit: see maxStore.
		JetStreamMaxStore: maxStore(c.MaxStore),
	}
	n.opts = opts.Clone() // what JetStream starts again from
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	// The server's own logger would end the process on a failure to start: this one has it
	// returned.
	log := newServerLog(c.Logger, c.Debug)
	s.SetLoggerV2(log, false, false, false)
	if err := run(s, log); err != nil {
		return err
	}
	if err := addrfile.Record(c.DataDir, addrfile.NATS, addrfile.Reachable("nats://"+s.Addr().String())); err != nil {
		s.Shutdown()
		return err
	}
	n.server = s
	return nil
}

// Server is the embedded server, nil with an external NATS.
func (n *Node) Server() *server.Server { return n.server }

// Conn is the connection the roles share.
func (n *Node) Conn() *nats.Conn { return n.conn }

// Conns are the shared connection and the roles' own.
func (n *Node) Conns() []*nats.Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*nats.Conn{n.conn}, n.roles...)
}

// syncQueue bounds the queue of a synchronous subscription, which the client otherwise
// allocates for 65,536 messages (512 KB) each time. The only ones this service makes carry
// one batch of direct gets (at most a few hundred messages) each, and a load makes one.
var syncQueue = nats.SyncQueueLen(1024)

// errorHandler logs the connection's asynchronous errors (a subscription falling behind, say)
// through the service's logger rather than the client's own printing to standard error.
func (n *Node) errorHandler() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		n.cfg.Logger.Warn("nats: asynchronous error", "subject", subject, "err", err)
	})
}

// dial opens a connection named name to the embedded server, or to the configured cluster.
func (n *Node) dial(name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), n.errorHandler(), syncQueue}
	if n.server != nil {
		nc, err := nats.Connect("", append(opts, nats.InProcessServer(n.server), n.user)...)
		if err != nil {
			return nil, fmt.Errorf("connect to embedded nats: %w", err)
		}
		return nc, nil
	}
	url, log := n.cfg.URL, n.cfg.Logger
	// A cluster starting with the service may not accept connections yet: the connection is
	// made in the background, and what needs it waits (see Provision).
	opts = append(opts, n.options...)
	nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("nats disconnected", "connection", name, "err", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "connection", name, "url", nc.ConnectedUrlRedacted())
		}))...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactedURL(url), err)
	}
	return nc, nil
}

// Dial opens the connection of a role, closed with the others by Close. The documents mirror,
// which loads every bundle at start, and the webhook dispatcher, which reads windows in bulk,
// each get their own: on a shared connection the megabytes they receive queue ahead of the write
// side's acknowledgements, and a day change at restart took several times longer. The projector
// keeps the shared one: on its own, it took so much of the machine while it followed an import
// that the import ran at half its rate.
func (n *Node) Dial(role string) (*nats.Conn, error) {
	nc, err := n.dial("publisher-" + role)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.roles = append(n.roles, nc)
	n.mu.Unlock()
	return nc, nil
}

// OnReconnect has nc, back from a disconnection from an external NATS, log so and call f: the
// mirrors watch again at once rather than when the client notices that their watch's consumer
// went with the server.
func (n *Node) OnReconnect(nc *nats.Conn, f func()) {
	if n.server != nil {
		// The embedded server never goes away, but its JetStream may start again when its
		// volume has room again (see restartJetStream): the watches then start again at once.
		n.mu.Lock()
		n.restarted = append(n.restarted, f)
		n.mu.Unlock()
		return
	}
	log := n.cfg.Logger
	nc.SetReconnectHandler(func(nc *nats.Conn) {
		log.Info("nats reconnected", "connection", nc.Opts.Name, "url", nc.ConnectedUrlRedacted())
		f()
	})
}

// Close drains and closes the roles' connections, then the shared one, then stops the embedded
// server.
func (n *Node) Close() {
	n.mu.Lock()
	conns := append(n.roles, n.conn)
	n.mu.Unlock()
	for _, nc := range conns {
		if nc != nil {
			_ = nc.Drain()
			nc.Close()
		}
	}
	if n.server != nil {
		n.server.Shutdown()
		n.server.WaitForShutdown()
		addrfile.Forget(n.cfg.DataDir, addrfile.NATS)
	}
}
