package node

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/opencarte/publisher/cmd/publisher/addrfile"
)

// DefaultURL is where a command other than serve looks for NATS when neither --nats-url nor the
// data directory says: the embedded server's default client listener.
const DefaultURL = "nats://127.0.0.1:4222"

// Client is how a command other than serve reaches the service's NATS: its flags, and the
// connection they make.
type Client struct {
	url, dataDir string
	auth         Auth
}

// Register adds the flags to fs; what says what the NATS URL is for.
func (c *Client) Register(fs *flag.FlagSet, what string) {
	fs.StringVar(&c.url, "nats-url", "", what+" (default: the address a serve on --data-dir records in <data-dir>/"+addrfile.NATS+" while its embedded server runs, else "+DefaultURL+")")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "data directory of a local serve: its embedded server's address and user are used unless --nats-url or other credentials are given")
	c.auth.Register(fs)
}

// Connect connects, named name, with the credentials given, or, for a loopback URL and none
// given, as the embedded server's user whose seed is in the data directory. Without a URL, it
// connects to the embedded server of a serve on the data directory, at the address it recorded.
func (c *Client) Connect(name string, getenv func(string) string) (*nats.Conn, error) {
	auth := &c.auth
	if err := auth.Load(getenv); err != nil {
		return nil, err
	}
	url, hint, err := c.target()
	if err != nil {
		return nil, err
	}
	if auth.Creds == "" && auth.NKey == "" && auth.User == "" && loopbackURL(url) {
		if seed := filepath.Join(c.dataDir, SeedFile); fileExists(seed) {
			auth.NKey = seed
		}
	}
	opts, err := auth.options()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, append(opts, nats.Name(name), syncQueue)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w%s", redactedURL(url), err, hint)
	}
	return nc, nil
}

// target returns the URL to connect to: --nats-url, else the address the data directory records,
// else DefaultURL; with, for the latter two, what to add to an error connecting to it.
func (c *Client) target() (url, hint string, err error) {
	if c.url != "" {
		return c.url, "", nil
	}
	recorded, err := addrfile.Read(c.dataDir, addrfile.NATS)
	switch {
	case err != nil:
		return "", "", err
	case recorded == "":
		return DefaultURL, " (no serve with an embedded server runs on --data-dir " + c.dataDir + ": start one, or give --nats-url)", nil
	}
	return recorded, " (the address " + filepath.Join(c.dataDir, addrfile.NATS) + " records: is serve still running?)", nil
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
