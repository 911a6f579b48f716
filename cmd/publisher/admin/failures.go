package admin

import (
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
// A wrong token waits out its penalty on its own goroutine and a timer, and stops waiting when
// its client gives up. An address has at most maxWaiting of them waiting at once: its others are
// answered 429 at once, with the penalty as Retry-After. Waiting requests hold their connections
// busy, and the listener keeps a client's busy connections within its share: were every wrong
// token to wait, one user of the machine could keep the operator's next connection out. The
// token is 128 random bits: telling a guess is wrong sooner helps no one guess it.
const (
	freeFailures   = 5
	firstPenalty   = time.Second
	maxPenalty     = 4 * time.Second
	maxWaiting     = 8
	failureWindow  = time.Minute
	failureClients = 10_000
)

type failures struct {
	mu      sync.Mutex
	clients *lru.Cache[netip.Prefix, *failed]
}

// failed counts the failures of one address within the window that began at since, and its
// answers waiting out their penalties.
type failed struct {
	since   time.Time
	count   int
	waiting int
}

func newFailures() *failures {
	clients, _ := lru.New[netip.Prefix, *failed](failureClients)
	return &failures{clients: clients}
}

// fail counts a failed authentication of client at now and returns how long its answer waits,
// and what to call once it waited; busy when the client has maxWaiting answers waiting already,
// then this one is not to wait.
func (f *failures) fail(client netip.Prefix, now time.Time) (d time.Duration, done func(), busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients.Get(client)
	if !ok || now.Sub(c.since) >= failureWindow {
		c = &failed{since: now}
		f.clients.Add(client, c)
	}
	c.count++
	if d = penalty(c.count); d == 0 {
		return 0, func() {}, false
	}
	if c.waiting >= maxWaiting {
		return d, func() {}, true
	}
	c.waiting++
	return d, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		c.waiting--
	}, false
}

// penalty is how long the answer to the n-th failure of a window waits.
func penalty(n int) time.Duration {
	if n <= freeFailures {
		return 0
	}
	return min(firstPenalty<<min(n-freeFailures-1, 8), maxPenalty)
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
