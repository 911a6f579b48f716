package admin

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Failed authentications slow guessing down and never refuse the right token, which is checked
// first and never waits: every local user shares the loopback address, and one of them sending
// wrong tokens must not keep the operator out. An address may send freeFailures missing or wrong
// tokens within failureWindow (a typo, a script with a stale token), answered at once; each later
// one within the window is answered 401 only after a penalty, firstPenalty doubling up to
// maxPenalty. At most failureClients addresses are remembered, the least recently failing
// forgotten first.
//
// Each wrong token waits out its own penalty, however many of them an address has waiting:
// answering some of them sooner (a 429 at once, say) would tell their sender they are wrong as
// fast as it sends them. A request waits on its own goroutine, which its connection costs whether
// it waits or idles, and on a timer; it stops waiting when its client gives up. An address then
// gets one answer to a wrong token per maxPenalty and connection, past the free ones.
const (
	freeFailures   = 5
	firstPenalty   = time.Second
	maxPenalty     = 4 * time.Second
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

// fail counts a failed authentication of client at now and returns how long its answer waits.
func (f *failures) fail(client netip.Prefix, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients.Get(client)
	if !ok || now.Sub(c.since) >= failureWindow {
		c = &failed{since: now}
		f.clients.Add(client, c)
	}
	c.count++
	return penalty(c.count)
}

// penalty is how long the answer to the n-th failure of a window waits.
func penalty(n int) time.Duration {
	if n <= freeFailures {
		return 0
	}
	return min(firstPenalty<<min(n-freeFailures-1, 8), maxPenalty)
}

// wait returns after d, or false as soon as ctx ends.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// loopback is the client every loopback address is: the users of this machine, who could
// otherwise count as 16 million IPv4 addresses.
var loopback = netip.PrefixFrom(netip.IPv6Loopback(), 128)

// clientOf is the address r came from, an IPv6 address by its /64 and a loopback one as
// loopback: the admin API trusts no proxy's word for it.
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
	if addr.IsLoopback() {
		return loopback
	}
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}
