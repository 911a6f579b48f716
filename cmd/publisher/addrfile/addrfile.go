package addrfile

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// The address files, in the data directory.
const (
	NATS  = "nats.url"  // the embedded NATS server's client URL
	Admin = "admin.url" // the admin API's base URL
)

// Reachable returns u, a URL whose host is a listener's, with a wildcard host (0.0.0.0, ::, or
// none) replaced by the loopback address of its family: the URL a client on this machine uses.
// A URL it cannot read is returned as it is.
func Reachable(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Port() == "" {
		return u
	}
	host := p.Hostname()
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && ip == netip.IPv4Unspecified():
		host = "127.0.0.1"
	case err == nil && ip.IsUnspecified():
		host = "::1"
	default:
		return u
	}
	p.Host = net.JoinHostPort(host, p.Port())
	return p.String()
}

// Record writes u to the address file name of dir.
func Record(dir, name, u string) error {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path+".tmp", []byte(u+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the address in %s: %w", path, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("record the address in %s: %w", path, err)
	}
	return nil
}

// Forget removes the address file name of dir, once its listener closed.
func Forget(dir, name string) { _ = os.Remove(filepath.Join(dir, name)) }

// Read returns the URL the address file name of dir records, "" when there is none.
func Read(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("--data-dir: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
