// Package natstest starts real NATS servers with JetStream inside a test process: a single node on
// a random loopback port with its store under t.TempDir, or a three-node cluster; and writes the
// certificate a server with TLS presents. It is test support only; no production package imports
// it.
package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options returns the options of a single JetStream node on a random loopback port storing in dir.
func Options(dir string) *server.Options {
	return &server.Options{
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
}

// Start runs a JetStream server with its store in a fresh temporary directory and shuts it down
// when the test ends.
func Start(tb testing.TB) *server.Server {
	tb.Helper()
	return StartWith(tb, Options(tb.TempDir()))
}

// StartWith runs a server with the given options and shuts it down when the test ends.
func StartWith(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("new nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		tb.Fatalf("nats server not ready")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// StartLimited runs a JetStream server, as Start does, on which a stream accepts at most
// maxConsumers consumers: code that opens a consumer per establishment or per request fails on
// it as soon as it handles more than that.
func StartLimited(tb testing.TB, maxConsumers int) *server.Server {
	tb.Helper()
	opts := Options(tb.TempDir())
	opts.JetStreamLimits.DefaultMaxConsumers = maxConsumers
	return StartWith(tb, opts)
}

// Connect opens a client connection to s and closes it when the test ends.
func Connect(tb testing.TB, s *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		tb.Fatalf("connect to nats: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// FreePort returns a loopback TCP port that was free a moment ago. It is chosen at random below
// 32768, where the systems this runs on take the local ports of outgoing connections (32768 to
// 60999 on Linux, 49152 and up elsewhere): a port the system gives a listener is in that range,
// and the connections of tests running beside this one could take it before a server listens on
// it.
func FreePort(tb testing.TB) int {
	tb.Helper()
	const low, high = 20000, 32768
	for range 100 {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	tb.Fatalf("free port: none free of 100 tried between %d and %d", low, high)
	return 0
}

// StartCluster runs three clustered JetStream servers on loopback and waits until the cluster has
// a JetStream meta leader. It returns the servers; connect to any of them.
func StartCluster(tb testing.TB) []*server.Server {
	tb.Helper()
	servers := StartForming(tb)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return servers
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("no jetstream meta leader within 20s")
	return nil
}

// StartForming runs three clustered JetStream servers on loopback and returns as soon as each
// accepts connections, before the cluster has elected its JetStream meta leader: a cluster
// still forming, as one whose nodes start with the service.
func StartForming(tb testing.TB) []*server.Server {
	tb.Helper()
	_, start := PlanCluster(tb)
	return start()
}

// PlanCluster chooses the addresses of three clustered JetStream servers on loopback and returns
// their client URLs, and start, which runs them and returns as soon as each accepts connections:
// clients can be started before the cluster exists.
func PlanCluster(tb testing.TB) (urls []string, start func() []*server.Server) {
	tb.Helper()
	const n = 3
	routePorts, clientPorts := make([]int, n), make([]int, n)
	routes := make([]string, n)
	for i := range n {
		routePorts[i], clientPorts[i] = FreePort(tb), FreePort(tb)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i])
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	return urls, func() []*server.Server {
		servers := make([]*server.Server, n)
		for i := range servers {
			opts := Options(tb.TempDir())
			opts.Port = clientPorts[i]
			opts.ServerName = fmt.Sprintf("n%d", i+1)
			opts.Cluster = server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: routePorts[i]}
			opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
			servers[i] = StartWith(tb, opts)
		}
		return servers
	}
}
