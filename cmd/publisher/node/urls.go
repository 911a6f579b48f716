package node

import (
	"net"
	"net/netip"
	"strings"
)

// loopbackURL says whether every server of a NATS URL list is on this machine: a local serve's
// embedded server, whose user is in the data directory.
func loopbackURL(urls string) bool {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if i := strings.Index(u, "://"); i >= 0 {
			u = u[i+3:]
		}
		if i := strings.LastIndex(u, "@"); i >= 0 {
			u = u[i+1:]
		}
		host, _, err := net.SplitHostPort(u)
		if err != nil {
			host = u
		}
		if ip, err := netip.ParseAddr(host); !(host == "localhost" || err == nil && ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// redactedURL is u, a list of NATS URLs, without any user, password or token it carries: what
// lies between a URL's scheme (if any) and its last "@", whether or not the URL parses (a
// password may hold "#", "/" or "?").
func redactedURL(u string) string {
	var out []string
	for _, one := range strings.Split(u, ",") {
		one = strings.TrimSpace(one)
		if at := strings.LastIndex(one, "@"); at >= 0 {
			start := 0
			if i := strings.Index(one, "://"); i >= 0 && i < at {
				start = i + 3
			}
			one = one[:start] + one[at+1:]
		}
		out = append(out, one)
	}
	return strings.Join(out, ",")
}
