package node

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startWithin starts the embedded server of cfg and returns Start's error, failing the test
// unless Start returns within a generous bound.
func startWithin(t *testing.T, cfg Config) error {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	go func() {
		n, err := Start(cfg)
		if err == nil {
			n.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return within 10s")
		return nil
	}
}

// TestBusyNATSAddressFailsAtOnce: a --nats-listen address another process listens on (a
// developer's own NATS) fails the start at once, naming the address, the cause and the flags
// that avoid it.
func TestBusyNATSAddressFailsAtOnce(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	err = startWithin(t, Config{Listen: addr, DataDir: t.TempDir()})
	if err == nil {
		t.Fatalf("got a node on %s, want the busy address refused", addr)
	}
	for _, want := range []string{"embedded nats", addr, "address already in use", "--nats-listen", "--nats-url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to say %q", err, want)
		}
	}
}

// TestEmbeddedNATSFailureToStartIsReturned: a failure the server meets while it starts (here a
// store directory it cannot create) is returned at once, with what the server said, rather than
// waited on; and the address it was to listen on is free again.
func TestEmbeddedNATSFailureToStartIsReturned(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nats"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	err = startWithin(t, Config{Listen: addr, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "embedded nats did not start") || !strings.Contains(err.Error(), "JetStream") {
		t.Fatalf("got %v, want the server's failure to start JetStream", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("after the failed start, %s: %v; want it free", addr, err)
	}
	ln.Close()
}

// TestServerListenFailureIsReturned: an address taken between the check and the server's own
// listen is returned at once with the server's words, which name it, and the server stopped.
func TestServerListenFailureIsReturned(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	log := newServerLog(slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	s.SetLoggerV2(log, false, false, false)
	err = run(s, log)
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v, want the server's listen failure naming %s", err, busy.Addr())
	}
	if s.Running() {
		t.Error("the server still runs after its failed start")
	}
}
