package node

import (
	"errors"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
)

// TestClientFindsTheEmbeddedServerInTheDataDirectory starts the embedded server on any free port
// and connects a Client given only the data directory: it reaches the server at the address the
// server recorded, as its user. Once the server stopped, the record is gone and the Client's
// error names the data directory.
func TestClientFindsTheEmbeddedServerInTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	n, err := Start(Config{Listen: "127.0.0.1:-1", DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	recorded, err := os.ReadFile(filepath.Join(dir, addrfile.NATS))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(recorded)), n.Server().ClientURL(); got != want {
		t.Errorf("recorded address %q, want %q", got, want)
	}

	client := func() *Client {
		var c Client
		fs := flag.NewFlagSet("verify", flag.ContinueOnError)
		c.Register(fs, "NATS")
		if err := fs.Parse([]string{"--data-dir", dir}); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	nc, err := client().Connect("test", func(string) string { return "" })
	if err != nil {
		t.Fatalf("connect with --data-dir only: %v", err)
	}
	if got, want := nc.ConnectedUrl(), n.Server().ClientURL(); got != want {
		t.Errorf("connected to %q, want %q", got, want)
	}
	nc.Close()

	n.Close()
	if _, err := os.Stat(filepath.Join(dir, addrfile.NATS)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the server stopped, %s: got %v, want it removed", addrfile.NATS, err)
	}
	url, hint, err := client().target()
	if err != nil || url != DefaultURL || !strings.Contains(hint, "--data-dir "+dir) {
		t.Errorf("with no server recorded: got %q %q %v, want %s and the data directory named", url, hint, err, DefaultURL)
	}
}
