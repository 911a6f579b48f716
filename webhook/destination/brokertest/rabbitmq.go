//go:build brokers

package brokertest

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Where Debian's packages put the programs a RabbitMQ node needs: the server's own script (the
// one in /usr/sbin switches to the rabbitmq user) and Erlang's port mapper.
const (
	rabbitMQServer = "/usr/lib/rabbitmq/bin/rabbitmq-server"
	epmdProgram    = "epmd"
)

// How long a node may take to accept AMQP, and to stop.
const (
	rabbitMQBoot = 90 * time.Second
	rabbitMQStop = 30 * time.Second
)

// RabbitMQOptions configure a node. User and Password are its user's, "guest" and "guest"
// unless given. With TLSCert and TLSKey (PEM files) it also listens for amqps:// with that
// certificate.
type RabbitMQOptions struct {
	User, Password  string
	TLSCert, TLSKey string
}

// RabbitMQ is a private node of Debian's rabbitmq-server: its own Erlang port mapper, its
// configuration, data and logs in a directory, on free ports of 127.0.0.1 that stay the same
// across Stop and Start, so that durable exchanges, queues and persistent messages survive.
type RabbitMQ struct {
	dir            string
	port, tlsPort  int
	user, password string
	env            []string
	epmd           *exec.Cmd

	mu     sync.Mutex
	node   *exec.Cmd
	exited chan struct{}
}

var rabbitMQNodes atomic.Int64

// NewRabbitMQ starts a node storing in dir. A missing program is an error saying which Debian
// package to install.
func NewRabbitMQ(dir string, opts RabbitMQOptions) (*RabbitMQ, error) {
	if _, err := os.Stat(rabbitMQServer); err != nil {
		return nil, fmt.Errorf("no %s: apt-get install rabbitmq-server", rabbitMQServer)
	}
	epmdPath, err := exec.LookPath(epmdProgram)
	if err != nil {
		return nil, fmt.Errorf("no %s in PATH: apt-get install rabbitmq-server (it brings erlang-base)", epmdProgram)
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	r := &RabbitMQ{dir: dir, port: ports[0], user: cmp.Or(opts.User, "guest"), password: cmp.Or(opts.Password, "guest")}
	if opts.TLSCert != "" {
		r.tlsPort = ports[3]
	}
	if err := r.configure(opts); err != nil {
		return nil, err
	}
	node := fmt.Sprintf("brokertest-%d-%d@localhost", os.Getpid(), rabbitMQNodes.Add(1))
	r.env = rabbitMQEnv(dir, node, r.port, ports[1], ports[2])
	// The node's own port mapper, a child of this process, so that nothing outlives the test.
	r.epmd = exec.Command(epmdPath, "-port", strconv.Itoa(ports[2]))
	r.epmd.Env = r.env
	if err := r.epmd.Start(); err != nil {
		return nil, fmt.Errorf("epmd: %w", err)
	}
	if err := r.Start(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// StartRabbitMQ is NewRabbitMQ in a test's directory, closed when the test ends.
func StartRabbitMQ(tb testing.TB, opts RabbitMQOptions) *RabbitMQ {
	tb.Helper()
	r, err := NewRabbitMQ(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Close)
	return r
}

// configure writes the node's configuration: its listeners on 127.0.0.1, its user, no plugin,
// and a disk limit low enough that a full test machine does not block publishers.
func (r *RabbitMQ) configure(opts RabbitMQOptions) error {
	conf := fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d\ndisk_free_limit.absolute = 1MB\ndefault_user = %s\ndefault_pass = %s\n",
		r.port, r.user, r.password)
	if r.tlsPort != 0 {
		conf += fmt.Sprintf("listeners.ssl.default = 127.0.0.1:%d\nssl_options.certfile = %s\nssl_options.keyfile = %s\n"+
			"ssl_options.verify = verify_none\nssl_options.fail_if_no_peer_cert = false\n", r.tlsPort, opts.TLSCert, opts.TLSKey)
	}
	files := map[string]string{"rabbitmq.conf": conf, "enabled_plugins": "[].\n", "rabbitmq-env.conf": ""}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// rabbitMQEnv is the node's environment: this process's without its RabbitMQ and Erlang
// settings, the directory as HOME (where the node writes its Erlang cookie) and the node's name,
// ports and files.
func rabbitMQEnv(dir, node string, port, distPort, epmdPort int) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RABBITMQ_") && !strings.HasPrefix(kv, "ERL_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+dir,
		"ERL_EPMD_PORT="+strconv.Itoa(epmdPort),
		"RABBITMQ_NODENAME="+node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(distPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(dir, "advanced.config"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
	)
}

// freePorts returns n ports of 127.0.0.1 free at the time of the call.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Addr returns the node's AMQP address, host:port.
func (r *RabbitMQ) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL returns the URL of the node with its user's credentials.
func (r *RabbitMQ) URL() string { return r.userURL("amqp", r.port, r.password) }

// TLSURL returns the amqps:// URL of the node with its user's credentials; the node listens for
// it only when started with a certificate.
func (r *RabbitMQ) TLSURL() string { return r.userURL("amqps", r.tlsPort, r.password) }

// URLWithPassword returns the URL of the node for its user with another password.
func (r *RabbitMQ) URLWithPassword(password string) string {
	return r.userURL("amqp", r.port, password)
}

func (r *RabbitMQ) userURL(scheme string, port int, password string) string {
	u := url.URL{Scheme: scheme, User: url.UserPassword(r.user, password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/"}
	return u.String()
}

// Start starts the node, after NewRabbitMQ's or after Stop, and returns once it accepts AMQP.
func (r *RabbitMQ) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.node != nil {
		return errors.New("rabbitmq: already started")
	}
	log, err := os.OpenFile(filepath.Join(r.dir, "node.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(rabbitMQServer)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.dir, r.env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("rabbitmq-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.node, r.exited = cmd, exited
	for deadline := time.Now().Add(rabbitMQBoot); ; {
		conn, err := amqp.Dial(r.URL())
		if err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			r.node = nil
			return fmt.Errorf("rabbitmq-server exited while starting: %s", r.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return fmt.Errorf("rabbitmq-server did not accept AMQP within %s: %v; %s", rabbitMQBoot, err, r.logTail())
		}
	}
}

// logTail returns the end of the node's output, for an error.
func (r *RabbitMQ) logTail() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "node.out"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop stops the node, keeping its data: its script shuts the node down on SIGTERM; a node
// still running after rabbitMQStop is killed.
func (r *RabbitMQ) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
}

func (r *RabbitMQ) stop() {
	if r.node == nil {
		return
	}
	_ = r.node.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(rabbitMQStop):
		_ = syscall.Kill(-r.node.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
	r.node = nil
}

// Close stops the node and its port mapper.
func (r *RabbitMQ) Close() {
	r.Stop()
	if r.epmd != nil && r.epmd.Process != nil {
		_ = r.epmd.Process.Kill()
		_ = r.epmd.Wait()
	}
}

// Consumer reads a durable queue bound to an exchange in the background, reconnecting when the
// node comes back, and keeps every message it read, acknowledging each once kept: a message the
// node took is read once or more, never lost.
type Consumer struct {
	url, exchange, kind, queue string
	keys                       []string

	mu       sync.Mutex
	messages []amqp.Delivery
	closing  chan struct{}
	done     chan struct{}
}

// Consume declares the exchange (durable, of kind, as a destination declares it) and a durable
// queue bound to it with each binding key, and reads the queue until Close.
func Consume(url, exchange, kind, queue string, keys ...string) (*Consumer, error) {
	c := &Consumer{url: url, exchange: exchange, kind: kind, queue: queue, keys: keys,
		closing: make(chan struct{}), done: make(chan struct{})}
	conn, deliveries, err := c.subscribe()
	if err != nil {
		return nil, err
	}
	go c.run(conn, deliveries)
	return c, nil
}

// subscribe connects, declares and binds, and starts reading.
func (c *Consumer) subscribe() (*amqp.Connection, <-chan amqp.Delivery, error) {
	conn, err := amqp.Dial(c.url)
	if err != nil {
		return nil, nil, err
	}
	deliveries, err := func() (<-chan amqp.Delivery, error) {
		ch, err := conn.Channel()
		if err != nil {
			return nil, err
		}
		if err := ch.ExchangeDeclare(c.exchange, c.kind, true, false, false, false, nil); err != nil {
			return nil, err
		}
		if _, err := ch.QueueDeclare(c.queue, true, false, false, false, nil); err != nil {
			return nil, err
		}
		for _, key := range c.keys {
			if err := ch.QueueBind(c.queue, key, c.exchange, false, nil); err != nil {
				return nil, err
			}
		}
		return ch.Consume(c.queue, "", false, false, false, false, nil)
	}()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("consume %s from %s: %w", c.queue, c.exchange, err)
	}
	return conn, deliveries, nil
}

func (c *Consumer) run(conn *amqp.Connection, deliveries <-chan amqp.Delivery) {
	defer close(c.done)
	for {
		c.read(deliveries)
		conn.Close()
		for {
			select {
			case <-c.closing:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var err error
			if conn, deliveries, err = c.subscribe(); err == nil {
				break
			}
		}
	}
}

// read keeps the deliveries until the connection ends or the consumer closes.
func (c *Consumer) read(deliveries <-chan amqp.Delivery) {
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return
			}
			c.mu.Lock()
			c.messages = append(c.messages, d)
			c.mu.Unlock()
			_ = d.Ack(false) // unacknowledged, it comes again after a reconnection
		case <-c.closing:
			return
		}
	}
}

// Messages returns the messages read so far, in the order read.
func (c *Consumer) Messages() []amqp.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]amqp.Delivery(nil), c.messages...)
}

// Close stops reading.
func (c *Consumer) Close() {
	close(c.closing)
	<-c.done
}
