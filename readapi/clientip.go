package readapi

import (
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
)

// forwardedForHeader is the canonical form of X-Forwarded-For.
const forwardedForHeader = "X-Forwarded-For"

// clientIP returns the address r is counted under: the connection's peer, or, when the peer is a
// trusted proxy, the nearest address of X-Forwarded-For that is not one (see forwardedClient).
// The result has no zone and no IPv4-mapped form; it is the zero Addr when the peer address
// cannot be read (a listener that is not TCP).
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if len(s.trusted) == 0 || !s.trusts(peer) {
		return peer
	}
	return s.forwardedClient(r.Header[forwardedForHeader], peer)
}

// peerAddr parses http.Request.RemoteAddr: "ip:port" or "[ip]:port" for TCP, the port left
// unread; a bare address is accepted too.
func peerAddr(remote string) netip.Addr {
	host := remote
	if strings.HasPrefix(remote, "[") {
		if end := strings.IndexByte(remote, ']'); end > 0 {
			host = remote[1:end]
		}
	} else if i := strings.IndexByte(remote, ':'); i >= 0 && strings.LastIndexByte(remote, ':') == i {
		host = remote[:i]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return plainAddr(a)
}

// plainAddr drops the zone and the IPv4-mapped form, so that one host has one address.
func plainAddr(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// trusts reports whether a is in one of the trusted proxy prefixes.
func (s *Server) trusts(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedClient walks the X-Forwarded-For list from its right end, the hop the trusted peer
// added, towards the left: the first address that is not a trusted proxy is the client. Entries
// left of it are the client's own claims and are never read. When every entry is trusted, the
// leftmost one is the client. An entry that is not an address (optionally with a port) ends the
// walk at the last trusted hop read, the peer when there is none. Repeated header fields are one
// list, in order.
func (s *Server) forwardedClient(fields []string, peer netip.Addr) netip.Addr {
	client := peer
	for i := len(fields) - 1; i >= 0; i-- {
		list := fields[i]
		for list != "" {
			var hop string
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				hop, list = list[j+1:], list[:j]
			} else {
				hop, list = list, ""
			}
			hop = textproto.TrimString(hop)
			if hop == "" {
				continue // empty list element
			}
			a, ok := parseHop(hop)
			if !ok {
				return client
			}
			client = a
			if !s.trusts(a) {
				return client
			}
		}
	}
	return client
}

// parseHop parses one X-Forwarded-For element: an address, or an address and port as some
// proxies write it ("192.0.2.1:4711", "[2001:db8::1]:4711").
func parseHop(hop string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(hop); err == nil {
		return plainAddr(a), true
	}
	if ap, err := netip.ParseAddrPort(hop); err == nil {
		return plainAddr(ap.Addr()), true
	}
	return netip.Addr{}, false
}

// unknownClient is the key of requests whose peer address cannot be read. It lies in ff00::/8,
// multicast, which is never the source of a connection, so it names no real client.
var unknownClient = clientKey{0: 0xff, 1: 0xff, 2: 0xff, 3: 0xff, 4: 0xff, 5: 0xff, 6: 0xff, 7: 0xff}

// ipKey returns the quota key of a client address: the IPv4 address, or the /64 prefix of an IPv6
// address, the block one host or household gets, so that rotating through the addresses of one
// prefix gives no extra quota.
func ipKey(a netip.Addr) clientKey {
	switch {
	case a.Is4():
		return clientKey(a.As16())
	case a.Is6():
		k := clientKey(a.As16())
		clear(k[8:])
		return k
	default:
		return unknownClient
	}
}
