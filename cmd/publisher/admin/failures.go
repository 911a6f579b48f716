package admin

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Failed authentications: an address (an IPv6 /64) that sent maxFailures wrong or missing tokens
// within failureWindow is refused until the window ends. At most failureClients addresses are
// remembered, the least recently failing forgotten first.
const (
	maxFailures    = 10
	failureWindow  = time.Minute
	failureClients = 10_000
)

type failures struct {
	mu      sync.Mutex
	clients *lru.Cache[netip.Prefix, *failed]
}

// failed counts the failures of one address within the window that began at since.
type failed struct {
	since time.Time
	count int
}

func newFailures() *failures {
	clients, _ := lru.New[netip.Prefix, *failed](failureClients)
	return &failures{clients: clients}
}

// blocked returns how long client is still refused at now; 0 when it is not.
func (f *failures) blocked(client netip.Prefix, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients.Peek(client)
	if !ok || c.count < maxFailures {
		return 0
	}
	return max(c.since.Add(failureWindow).Sub(now), 0)
}

// fail counts a failed authentication of client at now.
func (f *failures) fail(client netip.Prefix, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients.Get(client)
	if !ok || now.Sub(c.since) >= failureWindow {
		f.clients.Add(client, &failed{since: now, count: 1})
		return
	}
	c.count++
}

// clientOf is the address r came from, an IPv6 address by its /64: the admin API trusts no
// proxy's word for it.
func clientOf(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	addr = addr.Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}
