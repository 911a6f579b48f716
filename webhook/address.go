package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxURLLen bounds a receiver URL.
const maxURLLen = 2048

// resolveTimeout bounds the DNS lookup of a receiver's host at registration.
const resolveTimeout = 5 * time.Second

// specialNetworks are the non-public ranges that netip's predicates do not cover. Loopback,
// private (RFC 1918 and fc00::/7, which holds fd00:ec2::254), link-local (which holds the
// 169.254.169.254 metadata address), multicast and unspecified addresses are checked with them.
var specialNetworks = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space"}, // holds the 100.100.100.200 metadata address
	{netip.MustParsePrefix("192.0.0.0/24"), "protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},  // holds 255.255.255.255
	{netip.MustParsePrefix("::/96"), "ipv4-compatible"}, // deprecated; ::127.0.0.1 may still route to loopback
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "ipv4-translated"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Prefixes of IPv6 addresses that carry an IPv4 address a router may reach: NAT64 (the IPv4
// address is in the last 4 bytes) and 6to4 (bytes 2 to 5).
var (
	nat64Prefixes = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixToFour     = netip.MustParsePrefix("2002::/16")
)

// addressPolicy decides which receiver addresses may be used.
type addressPolicy struct {
	allowAll bool
	allowed  []netip.Prefix
	hint     string // how to allow a refused address; empty: defaultAllowHint
}

// defaultAllowHint says how to allow a receiver address that is not public when the
// configuration gives no hint of its own.
const defaultAllowHint = "Config.AllowPrivate or Config.AllowedNetworks allow it"

// nonPublic returns why addr is not a public unicast address, or "" when it is.
func nonPublic(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, n := range specialNetworks {
		if n.prefix.Contains(addr) {
			return n.reason
		}
	}
	if addr.Is6() {
		b := addr.As16()
		for _, p := range nat64Prefixes {
			if p.Contains(addr) {
				if r := nonPublic(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
					return "nat64 of " + r
				}
			}
		}
		if sixToFour.Contains(addr) {
			if r := nonPublic(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
				return "6to4 of " + r
			}
		}
	}
	return ""
}

// check returns an error matching ErrRefusedAddress when addr may not be used.
func (p addressPolicy) check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	if p.allowAll {
		return nil
	}
	for _, n := range p.allowed {
		if n.Contains(addr) {
			return nil
		}
	}
	if reason := nonPublic(addr); reason != "" {
		return fmt.Errorf("%w: %s is %s: %s", ErrRefusedAddress, addr, reason, cmp.Or(p.hint, defaultAllowHint))
	}
	return nil
}

// control is a net.Dialer Control function: it runs after name resolution, for every address
// the dialer is about to connect to, so a host that resolves to a public address at
// registration and to a private one later is still refused.
func (p addressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrRefusedAddress, address, err)
	}
	return p.check(ap.Addr())
}

// parseReceiverURL checks the form of a receiver URL: absolute, https, a host, an optional port,
// no user information and no fragment. It does not resolve the host.
func parseReceiverURL(raw string) (*url.URL, error) {
	if len(raw) > maxURLLen {
		return nil, fmt.Errorf("%w: url: longer than %d bytes", ErrInvalidEndpoint, maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: url: %w", ErrInvalidEndpoint, err)
	}
	switch {
	case u.Scheme != "https":
		return nil, fmt.Errorf("%w: url: scheme %q, want https", ErrInvalidEndpoint, u.Scheme)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: url: no host", ErrInvalidEndpoint)
	case u.User != nil:
		return nil, fmt.Errorf("%w: url: user information is not allowed", ErrInvalidEndpoint)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%w: url: a fragment is not allowed", ErrInvalidEndpoint)
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, fmt.Errorf("%w: url: white space or control character", ErrInvalidEndpoint)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: url: port %q", ErrInvalidEndpoint, port)
		}
	}
	return u, nil
}

// resolveError tells a host that does not exist (an invalid endpoint) from a lookup that failed
// (try again later). The resolver's own error names the DNS server: it is not passed on.
func resolveError(host string, err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return fmt.Errorf("%w: url: host %s does not resolve", ErrInvalidEndpoint, host)
	}
	return fmt.Errorf("%w: url: could not resolve host %s now", ErrResolverUnavailable, host)
}

// checkReceiverURL checks the form of raw and that its host, or every address it resolves to,
// is allowed by the policy.
func (p addressPolicy) checkReceiverURL(ctx context.Context, resolver *net.Resolver, raw string) error {
	u, err := parseReceiverURL(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.check(addr); err != nil {
			return fmt.Errorf("url: %w", err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return resolveError(host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%w: url: %s has no address", ErrInvalidEndpoint, host)
	}
	for _, a := range addrs {
		if err := p.check(a); err != nil {
			return fmt.Errorf("url: %s: %w", host, err)
		}
	}
	return nil
}
