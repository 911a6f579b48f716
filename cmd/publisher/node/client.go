package node

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
)

// Client is how a command other than serve reaches the service's NATS: its flags, and the
// connection they make.
type Client struct {
	url, dataDir string
	auth         Auth
}

// Register adds the flags to fs; what says what the NATS URL is for.
func (c *Client) Register(fs *flag.FlagSet, what string) {
	fs.StringVar(&c.url, "nats-url", "nats://127.0.0.1:4222", what+" (a running serve's embedded server listens there)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "data directory of a local serve: its embedded server's user is used unless other credentials are given")
	c.auth.Register(fs)
}

// Connect connects, named name, with the credentials given, or, for a loopback URL and none
// given, as the embedded server's user whose seed is in the data directory.
func (c *Client) Connect(name string, getenv func(string) string) (*nats.Conn, error) {
	auth := &c.auth
	if err := auth.Load(getenv); err != nil {
		return nil, err
	}
	if auth.Creds == "" && auth.NKey == "" && auth.User == "" && loopbackURL(c.url) {
		if seed := filepath.Join(c.dataDir, SeedFile); fileExists(seed) {
			auth.NKey = seed
		}
	}
	opts, err := auth.options()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.url, append(opts, nats.Name(name), syncQueue)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactedURL(c.url), err)
	}
	return nc, nil
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
