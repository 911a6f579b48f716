package node

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AddressFile is the file, in the data directory, where the embedded server records the URL its
// client listener took (its port, when --nats-listen asked for any), for the other commands on
// the same data directory to reach it. It is removed when the server stops.
const AddressFile = "nats.url"

// recordAddress writes to dir's AddressFile the URL of addr, the embedded server's client
// listener, with a loopback host in place of a wildcard one.
func recordAddress(dir string, addr net.Addr) error {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("embedded nats: listener address %v: want a TCP address", addr)
	}
	ip := tcp.IP
	switch {
	case ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	url := "nats://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
	// Written aside and renamed, so that a reader never sees half of it.
	name := filepath.Join(dir, AddressFile)
	if err := os.WriteFile(name+".tmp", []byte(url+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the embedded nats address: %w", err)
	}
	if err := os.Rename(name+".tmp", name); err != nil {
		return fmt.Errorf("record the embedded nats address: %w", err)
	}
	return nil
}

// forgetAddress removes dir's AddressFile, once the embedded server stopped.
func forgetAddress(dir string) {
	_ = os.Remove(filepath.Join(dir, AddressFile))
}

// recordedAddress returns the URL dir's AddressFile records, "" when there is none.
func recordedAddress(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, AddressFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("--data-dir: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
