package main

import (
	"flag"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/node"
)

// storeFlags are the flags of the commands that work on a running service's store, verify and
// rebuild: how they reach its NATS, and the base URL of uploaded files the documents are rendered
// under. They learn the URL from what the projector stored; --public-url and --http, when given,
// state which one the user expects, and a statement that differs is refused.
type storeFlags struct {
	command   string // the command's name, in its refusals
	conn      node.Client
	publicURL string
	httpAddr  string
}

// defaultHTTP is serve's --http default, the files URL's before the projector stored one.
const defaultHTTP = "127.0.0.1:8080"

// register adds the flags to fs; natsWhat says what the NATS URL is for.
func (s *storeFlags) register(fs *flag.FlagSet, natsWhat string) {
	s.command = fs.Name()
	s.conn.Register(fs, natsWhat)
	fs.StringVar(&s.publicURL, "public-url", "", "serve's --public-url: refused unless the projector renders uploaded files under it (default: the URL the projector stored)")
	fs.StringVar(&s.httpAddr, "http", "", "serve's --http, when it runs without --public-url: checked as --public-url is (default: the URL the projector stored; before it stored one, "+defaultHTTP+")")
}

// connect connects to the service's NATS, named name.
func (s *storeFlags) connect(name string, getenv func(string) string) (*nats.Conn, error) {
	return s.conn.Connect(name, getenv)
}

// stated returns the files URL the command line or the environment states, and the flag that
// states it, as serve makes it: --public-url, else the local URL of --http; "" when neither is
// given.
func (s *storeFlags) stated() (url, flagValue string) {
	switch {
	case s.publicURL != "":
		return strings.TrimRight(s.publicURL, "/"), "--public-url " + s.publicURL
	case s.httpAddr != "":
		return localURL(s.httpAddr), "--http " + s.httpAddr
	}
	return "", ""
}

// checkFilesURL refuses a files URL stated by the flags that is not stored, the base URL the
// projector renders uploaded files under.
func (s *storeFlags) checkFilesURL(stored string) error {
	if url, flagValue := s.stated(); url != "" && url != stored {
		return envflag.Usagef(s.command, "%s: the projector renders uploaded files under %s, not %s: leave out --public-url and --http to use its URL, or restart serve with --public-url %[3]s first (it then renders every document again)",
			flagValue, stored, url)
	}
	return nil
}

// filesURL returns the base URL of uploaded files to render under: stored, the one the projector
// renders under, which a statement of the flags must match; with none stored (the projector has
// written no checkpoint yet), the one the flags state or their default.
func (s *storeFlags) filesURL(stored string) (string, error) {
	if stored != "" {
		return stored, s.checkFilesURL(stored)
	}
	if url, _ := s.stated(); url != "" {
		return url, nil
	}
	return localURL(defaultHTTP), nil
}
