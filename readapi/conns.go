package readapi

import (
	"io"
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
	// refusalLogClients bounds the addresses whose last log the listener remembers;
	// refusalLogLines bounds the lines a minute across addresses, past which the refusals are
	// counted into one line the next minute: a flood from more addresses than are remembered
	// still logs a bounded number of lines.
	refusalLogClients = 4096
	refusalLogLines   = 60
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
// PerClient from one address. A new connection takes the place of the one that has waited
// longest for a request (an idle keep-alive connection, or one that has not sent its first
// request yet): of its own client's when that client holds its share, of any client's when the
// listener is full. When there is none, every such connection being busy with a request, the new
// connection is answered at once and closed. So a client's idle connections never keep out its
// own next one, nor another's. The http.Server serving it must have its ConnState hook call
// Listener.ConnState.
type Listener struct {
	net.Listener
	lim ConnLimits

	mu      sync.Mutex
	open    int
	clients map[netip.Prefix]*clientConns // only the clients with a connection open
	// waiting lists the connections that wait for a request, the longest waiting first.
	waiting connList

	refused atomic.Uint64
	evicted atomic.Uint64
	logged  *lru.Cache[netip.Prefix, *refusals]
	// The lines logged this minute, since minute began, and the refusals not logged.
	minute     time.Time
	lines      int
	suppressed int
}

// refusals counts the connections of one address over the limits since they were last logged:
// refused, and let in in place of its own longest waiting one.
type refusals struct {
	at                time.Time
	refused, replaced int
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
	return &Listener{Listener: ln, lim: lim, clients: make(map[netip.Prefix]*clientConns), waiting: connList{at: allLinks}, logged: logged}
}

// clientConns are the connections of one client address: how many are open, and those that wait
// for a request, the longest waiting first.
type clientConns struct {
	open    int
	waiting connList
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
	var victim *limitedConn
	own := false // the victim is the client's own, the client being at its share
	cc := l.clients[client]
	switch {
	case counted && cc != nil && cc.open >= l.lim.PerClient:
		own = true
		if victim = cc.waiting.front(); victim == nil {
			l.mu.Unlock()
			l.refuse(c, client, refusalPerClient)
			return nil
		}
		l.releaseLocked(victim)
	case l.open >= l.lim.Total:
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
		if cc = l.clients[client]; cc == nil {
			cc = &clientConns{waiting: connList{at: ownLinks}}
			l.clients[client] = cc
		}
		cc.open++
		lc.mine = cc
	}
	l.wait(lc) // until its first request
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Conn.Close()
		if own {
			l.overLimit(client, false)
		}
	}
	return lc
}

// wait lists lc as waiting for a request, last; stopWaiting takes it off the lists.
func (l *Listener) wait(lc *limitedConn) {
	l.waiting.pushBack(lc)
	if lc.mine != nil {
		lc.mine.waiting.pushBack(lc)
	}
}

func (l *Listener) stopWaiting(lc *limitedConn) {
	l.waiting.remove(lc)
	if lc.mine != nil {
		lc.mine.waiting.remove(lc)
	}
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

// refuse answers c with the refusal and closes it, and logs it as over the limits.
func (l *Listener) refuse(c net.Conn, client netip.Prefix, answer []byte) {
	l.refused.Add(1)
	_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTime)) // the socket's clock, not the log's
	_, _ = c.Write(answer)
	_ = c.Close()
	l.overLimit(client, true)
}

// overLimit counts a connection of client over the limits: refused, or let in in place of the
// client's own longest waiting one. The address is logged at most once per refusalLogEvery, with
// its counts, and the listener logs at most refusalLogLines such lines a minute.
func (l *Listener) overLimit(client netip.Prefix, refused bool) {
	now := l.lim.Now()
	l.mu.Lock()
	r, ok := l.logged.Get(client)
	if !ok {
		r = &refusals{}
		l.logged.Add(client, r)
	}
	if refused {
		r.refused++
	} else {
		r.replaced++
	}
	due := r.at.IsZero() || now.Sub(r.at) >= refusalLogEvery
	counts := *r
	var others int // connections of addresses over the limits not logged during the last minute
	if now.Sub(l.minute) >= refusalLogEvery {
		l.minute, l.lines, others, l.suppressed = now, 0, l.suppressed, 0
	}
	if due && l.lines >= refusalLogLines {
		due = false
		l.suppressed++
	}
	if due {
		r.at, r.refused, r.replaced = now, 0, 0
		l.lines++
	}
	open, perClient := l.open, 0
	if cc := l.clients[client]; cc != nil {
		perClient = cc.open
	}
	l.mu.Unlock()
	if due {
		l.lim.Logger.Warn("connections over the limits", "listener", l.lim.Name, "client", client, "refused", counts.refused,
			"replaced_own", counts.replaced, "client_connections", perClient, "per_client_limit", l.lim.PerClient, "open", open, "limit", l.lim.Total)
	}
	if others > 0 {
		l.lim.Logger.Warn("connections over the limits from addresses not named, past the lines a minute", "listener", l.lim.Name,
			"connections", others, "lines_a_minute", refusalLogLines)
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
		l.stopWaiting(lc)
	case http.StateIdle:
		l.stopWaiting(lc)
		l.wait(lc)
	case http.StateHijacked:
		// Its handler owns it now: counted until it is closed.
		l.stopWaiting(lc)
	case http.StateClosed:
		l.releaseLocked(lc)
	}
}

// releaseLocked counts lc out, once.
func (l *Listener) releaseLocked(lc *limitedConn) {
	if lc.released {
		return
	}
	lc.released = true
	l.stopWaiting(lc)
	l.open--
	if cc := lc.mine; cc != nil {
		if cc.open--; cc.open <= 0 {
			delete(l.clients, lc.client)
		}
	}
}

// limitedConn is a connection the listener counts until it is closed.
type limitedConn struct {
	net.Conn
	l       *Listener
	client  netip.Prefix
	counted bool
	mine    *clientConns // its client's connections; nil when not counted per client

	// Guarded by l.mu.
	released bool
	all, own links // in the listener's waiting list, and in its client's
}

// links thread a connection through one list.
type links struct {
	prev, next *limitedConn
	listed     bool
}

// ReadFrom hands a body to the connection's own ReadFrom: net/http sends files through it, and a
// TCP connection's sends them with sendfile, without copying them through the process.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite shuts the connection's sending side, as net/http does before it closes a connection
// whose request body it did not read, so that the client reads the answer before the reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connList is a doubly linked list of connections threaded through them, by the links that at
// picks out of each: no allocation to add or remove one.
type connList struct {
	head, tail *limitedConn
	at         func(*limitedConn) *links
}

func allLinks(c *limitedConn) *links { return &c.all }
func ownLinks(c *limitedConn) *links { return &c.own }

func (q *connList) front() *limitedConn { return q.head }

func (q *connList) pushBack(c *limitedConn) {
	l := q.at(c)
	if l.listed {
		return
	}
	l.listed, l.prev, l.next = true, q.tail, nil
	if q.tail != nil {
		q.at(q.tail).next = c
	} else {
		q.head = c
	}
	q.tail = c
}

func (q *connList) remove(c *limitedConn) {
	l := q.at(c)
	if !l.listed {
		return
	}
	if l.prev != nil {
		q.at(l.prev).next = l.next
	} else {
		q.head = l.next
	}
	if l.next != nil {
		q.at(l.next).prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.listed, l.prev, l.next = false, nil, nil
}
