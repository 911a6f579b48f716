package readapi

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// ConnLimits bounds the connections a listener keeps open, so that no client, and no flood of
// them, takes the descriptors the process needs for itself (NATS, its store, the other
// listeners).
type ConnLimits struct {
	// Total is how many connections the listener keeps open at once. Required.
	Total int
	// PerClient is how many of them one client address (an IPv6 /64) may hold; 0 or more than a
	// quarter of Total is a quarter of Total, so that a few addresses cannot fill the listener.
	PerClient int
	// TrustedProxies are peers that carry many clients: their connections count in Total only.
	// The clients behind them are counted by their forwarded address in the quotas and the file
	// transfers.
	TrustedProxies []netip.Prefix
	// Name names the listener in the log.
	Name string
	// Logger hears of refused connections, once per client address per minute. Required.
	Logger *slog.Logger
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// How refusals are said.
const (
	// refusalLogEvery is how often the refusals of one client address are logged at most.
	refusalLogEvery = time.Minute
	// refusalLogClients bounds the addresses whose last log the listener remembers.
	refusalLogClients = 4096
	// refusalWriteTime bounds the write of a refusal: a new connection's empty buffer takes it at
	// once.
	refusalWriteTime = 50 * time.Millisecond
)

// The answers to connections refused, written before a request is read: 429 to a client over its
// own limit, 503 when the listener is full of connections that are all busy.
var (
	refusalPerClient = []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 32\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{\"error\":\"Too many connections\"}")
	refusalFull      = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 32\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{\"error\":\"Too many connections\"}")
)

// Listener is a net.Listener that keeps at most ConnLimits.Total connections open, at most
// PerClient from one address. When it is full, a new connection takes the place of the one that
// has waited longest for a request (an idle keep-alive connection, or one that has not sent its
// first request yet); when every connection is busy with a request, or the client holds its share,
// the new connection is answered at once and closed. The http.Server serving it must have its
// ConnState hook call Listener.ConnState.
type Listener struct {
	net.Listener
	lim ConnLimits

	mu        sync.Mutex
	open      int
	perClient map[netip.Prefix]int
	// waiting lists the connections that wait for a request, the longest waiting first.
	waiting connList

	refused atomic.Uint64
	evicted atomic.Uint64
	logged  *lru.Cache[netip.Prefix, *refusals]
}

// refusals counts the refused connections of one address since the last time they were logged.
type refusals struct {
	at    time.Time
	count int
}

// LimitListener bounds the connections of ln by lim.
func LimitListener(ln net.Listener, lim ConnLimits) *Listener {
	if lim.Total < 1 {
		lim.Total = 1
	}
	if quarter := max(lim.Total/4, 1); lim.PerClient <= 0 || lim.PerClient > quarter {
		lim.PerClient = quarter
	}
	if lim.Now == nil {
		lim.Now = time.Now
	}
	logged, _ := lru.New[netip.Prefix, *refusals](refusalLogClients)
	return &Listener{Listener: ln, lim: lim, perClient: make(map[netip.Prefix]int), logged: logged}
}

// ConnStats counts a listener's connections.
type ConnStats struct {
	Open    int    // open now
	Refused uint64 // answered and closed at once, since the start
	Evicted uint64 // closed while waiting for a request, to make room for a new one
}

// Stats returns the listener's counts.
func (l *Listener) Stats() ConnStats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return ConnStats{Open: open, Refused: l.refused.Load(), Evicted: l.evicted.Load()}
}

// Accept returns the next connection within the limits; the others are answered and closed.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit counts c in, making room for it if it must, or refuses it and returns nil.
func (l *Listener) admit(c net.Conn) *limitedConn {
	client, counted := l.clientOf(c)
	l.mu.Lock()
	if counted && l.perClient[client] >= l.lim.PerClient {
		l.mu.Unlock()
		l.refuse(c, client, refusalPerClient)
		return nil
	}
	var victim *limitedConn
	if l.open >= l.lim.Total {
		if victim = l.waiting.front(); victim == nil {
			l.mu.Unlock()
			l.refuse(c, client, refusalFull)
			return nil
		}
		l.releaseLocked(victim)
	}
	lc := &limitedConn{Conn: c, l: l, client: client, counted: counted}
	l.open++
	if counted {
		l.perClient[client]++
	}
	l.waiting.pushBack(lc) // until its first request
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Conn.Close()
	}
	return lc
}

// clientOf is the address c is counted under, and false for a trusted proxy's connection, which
// is not counted per address.
func (l *Listener) clientOf(c net.Conn) (netip.Prefix, bool) {
	var addr netip.Addr
	if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		addr = plainAddr(tcp.AddrPort().Addr())
	}
	for _, p := range l.lim.TrustedProxies {
		if addr.IsValid() && p.Contains(addr) {
			return netip.Prefix{}, false
		}
	}
	return clientPrefix(addr), true
}

// clientPrefix is the prefix an address is counted under: itself for IPv4, its /64 for IPv6,
// since one host commonly holds a whole /64.
func clientPrefix(a netip.Addr) netip.Prefix {
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// refuse answers c with the refusal and closes it, and logs the refusals of client at most once
// per refusalLogEvery, with their count.
func (l *Listener) refuse(c net.Conn, client netip.Prefix, answer []byte) {
	l.refused.Add(1)
	_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTime)) // the socket's clock, not the log's
	_, _ = c.Write(answer)
	_ = c.Close()
	now := l.lim.Now()
	l.mu.Lock()
	r, ok := l.logged.Get(client)
	if !ok {
		r = &refusals{}
		l.logged.Add(client, r)
	}
	r.count++
	due := r.at.IsZero() || now.Sub(r.at) >= refusalLogEvery
	count := r.count
	if due {
		r.at, r.count = now, 0
	}
	open, perClient := l.open, l.perClient[client]
	l.mu.Unlock()
	if due {
		l.lim.Logger.Warn("connections refused", "listener", l.lim.Name, "client", client, "refused", count,
			"client_connections", perClient, "per_client_limit", l.lim.PerClient, "open", open, "limit", l.lim.Total)
	}
}

// ConnState follows the connections' states: a connection waiting for a request may give its
// place to a new one. Set it as the http.Server's ConnState hook.
func (l *Listener) ConnState(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.released {
		return
	}
	switch state {
	case http.StateActive:
		l.waiting.remove(lc)
	case http.StateIdle:
		l.waiting.remove(lc)
		l.waiting.pushBack(lc)
	case http.StateHijacked, http.StateClosed:
		l.releaseLocked(lc)
	}
}

// releaseLocked counts lc out, once.
func (l *Listener) releaseLocked(lc *limitedConn) {
	if lc.released {
		return
	}
	lc.released = true
	l.waiting.remove(lc)
	l.open--
	if lc.counted {
		if l.perClient[lc.client]--; l.perClient[lc.client] <= 0 {
			delete(l.perClient, lc.client)
		}
	}
}

// limitedConn is a connection the listener counts until it is closed.
type limitedConn struct {
	net.Conn
	l       *Listener
	client  netip.Prefix
	counted bool

	// Guarded by l.mu.
	released   bool
	prev, next *limitedConn
	listed     bool
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connList is a doubly linked list of connections threaded through them: no allocation to add or
// remove one.
type connList struct{ head, tail *limitedConn }

func (q *connList) front() *limitedConn { return q.head }

func (q *connList) pushBack(c *limitedConn) {
	if c.listed {
		return
	}
	c.listed, c.prev, c.next = true, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

func (q *connList) remove(c *limitedConn) {
	if !c.listed {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.listed, c.prev, c.next = false, nil, nil
}
