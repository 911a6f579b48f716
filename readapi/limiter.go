package readapi

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// clientKey names what a quota counts: an IPv4 address, an IPv6 /64 prefix, or an API key (the
// first half of its SHA-256).
type clientKey [16]byte

// limiterShards is the number of independently locked parts of a limiter's table.
const (
	shardBits     = 6
	limiterShards = 1 << shardBits
)

// Samples taken from a shard's table, in the map's randomised iteration order, when a client
// is added: sweepSample entries are checked for expiry below the cap, evictSample at the cap.
const (
	sweepSample = 2
	evictSample = 8
)

// limiter enforces one quota (quota requests per window, per client) with the generic cell rate
// algorithm: a client is one timestamp, its theoretical arrival time (TAT). Each admitted request
// moves the TAT one emission interval (window/quota) later, starting from now when the TAT is in
// the past; a request is refused when that would put the TAT more than one window ahead. Hence a
// burst of quota requests at once, then one more every interval: in any period of length d, at
// most quota + d/interval requests are admitted.
//
// A TAT in the past means a full quota, exactly as an absent entry: such entries are deleted as
// clients are added, a few sampled each time. The table never holds more than shardCap entries
// per shard; at the cap an expired sample is reused, or else the sampled client closest to a
// full quota is forgotten.
//
// Times are nanoseconds on the server's clock (see Server.elapsed); the limiter reads no clock.
type limiter struct {
	quota    int64 // requests per window
	interval int64 // emission interval, window / quota
	window   int64
	shardCap int
	seed     [2]uint64 // random per limiter: a client cannot aim its keys at one shard
	shards   [limiterShards]limiterShard

	evicted atomic.Uint64 // live entries forgotten at the cap since the last report

	// nodes, when the quota is shared with other read nodes (see quotaShare), says how many
	// there are; nil while this node counts alone.
	nodes atomic.Pointer[membership]

	// tallying is set while each client's use is reported (see Server.ReportUsage): requests
	// admitted and refused, and those only looked at for a 304, are tallied in the shards.
	tallying  atomic.Bool
	untallied atomic.Uint64 // answers not tallied since the last report: a shard's use table was full
}

type limiterShard struct {
	mu  sync.Mutex
	tat map[clientKey]int64
	// shared holds, while the quota is shared with other read nodes, what this node admitted of
	// each client in the current period; an entry goes with the client's TAT.
	shared map[clientKey]shareEntry
	// touched lists the clients with requests admitted here and not yet reported to the other
	// nodes, each once.
	touched []clientKey
	// use indexes in useRows, while the limiter is tallying, each client tallied since the last
	// usage report; a known client's tally is one lookup.
	use     map[clientKey]int32
	useRows []useRow
	_       [128 - 80]byte // two cache lines per shard: no false sharing between locks
}

// shareEntry is what this node admitted of one client while the quota is shared.
type shareEntry struct {
	period  int64 // the sharing period used and cap are of
	used    int32 // requests this node admitted in period
	cap     int32 // the most any node may admit in period: a share of its room, rounded up
	prevCap int32 // cap of the period before, what a node late to report it may have admitted
	pending int32 // admitted since the last report to the other nodes
	spin    uint8 // turns the remainder of a split among the nodes, per client
}

// newLimiter returns a limiter of quota requests per window nanoseconds tracking at most
// maxClients clients, rounded up to a multiple of the shard count. quota must be in [1, window].
func newLimiter(quota, window int64, maxClients int) *limiter {
	return &limiter{
		quota:    quota,
		interval: window / quota,
		window:   window,
		shardCap: max(1, (maxClients+limiterShards-1)/limiterShards),
		seed:     [2]uint64{rand.Uint64(), rand.Uint64()},
	}
}

// capacity is the most entries the limiter ever holds.
func (l *limiter) capacity() int { return l.shardCap * limiterShards }

// decision is the outcome of a request under one quota.
type decision struct {
	allowed bool
	// remaining is the number of requests the client may make at once after this one.
	remaining int64
	// reset is the time in nanoseconds until the client has one request more than remaining:
	// when not allowed, the time to wait before the next request can be admitted.
	reset int64
}

// take admits one request of client k at now, or refuses it; a refused request costs nothing.
//
// While the quota is shared by n read nodes, the room a client has left is split between them
// for each sharing period, since what the others admit in a period reaches this node only at its
// end: this node admits at most its share of the room the client had when the period began,
// less, for each node whose report of the previous period has not arrived yet, what that node
// may have admitted in it.
func (l *limiter) take(k clientKey, now int64) decision {
	sh := l.shard(k)
	sh.mu.Lock()
	tat, found := sh.tat[k]
	if !found || tat < now {
		tat = now // an expired entry is a full quota, as an absent one
	}
	next := tat + l.interval
	if next-now > l.window {
		l.tally(sh, k, useLimited)
		sh.mu.Unlock()
		return decision{reset: next - l.window - now}
	}
	if m := l.nodes.Load(); m != nil && m.n > 1 {
		se := sh.shared[k]
		se.spin = k[7] ^ k[15]
		if wait, ok := l.admitShare(&se, m, tat, now); !ok {
			l.tally(sh, k, useLimited)
			sh.mu.Unlock()
			return decision{reset: wait}
		}
		if se.pending++; se.pending == 1 {
			sh.touched = append(sh.touched, k)
		}
		if sh.shared == nil {
			sh.shared = make(map[clientKey]shareEntry)
		}
		sh.shared[k] = se
	}
	l.tally(sh, k, useRequests)
	l.storeUnlock(sh, k, next, found, now)
	return l.state(next - now)
}

// storeUnlock stores tat as client k's in sh, whose lock is held, then releases the lock.
func (l *limiter) storeUnlock(sh *limiterShard, k clientKey, tat int64, found bool, now int64) {
	forgot := false
	if found {
		sh.tat[k] = tat
	} else {
		forgot = l.insert(sh, k, tat, now)
	}
	sh.mu.Unlock()
	if forgot {
		l.evicted.Add(1)
	}
}

// admitShare decides, for a client whose TAT is tat (at least now), whether this node's share of
// the current period has room for one more request, counting it in e when it has. When it has
// not, it returns the time until the next period.
func (l *limiter) admitShare(e *shareEntry, m *membership, tat, now int64) (int64, bool) {
	period := m.period(now)
	n := int64(m.n)
	room := (l.window - (tat - now)) / l.interval // what the client has left now
	if e.period != period {
		// The most any node may admit in a period is a share of the room at its start, rounded
		// up: what a late node is assumed to have admitted in each period not reported yet.
		prevCap := (room + n - 1) / n
		if e.period == period-1 {
			prevCap = int64(e.cap)
		}
		e.period, e.used, e.prevCap = period, 0, int32(min(prevCap, math.MaxInt32))
		e.cap = int32(min((room+n-1)/n, math.MaxInt32))
	}
	// The room when the period began, as this node now knows it: what is left, and what it
	// admitted itself since.
	base := room + int64(e.used)
	if late := m.late(period); late > 0 {
		base -= late * int64(e.prevCap)
	}
	base = max(base, 0)
	share := base / n
	// The remainder goes to different nodes in turn, period after period and client after
	// client: a quota smaller than the nodes still serves every one of them.
	if (int64(m.rank)+period+int64(e.spin))%n < base%n {
		share++
	}
	if int64(e.used) >= share {
		return max(m.periodEnd(period)-now, 1), false
	}
	e.used++
	return 0, true
}

// charge counts count requests of client k that another node admitted, reported at now.
func (l *limiter) charge(k clientKey, count int64, now int64) {
	count = min(max(count, 0), l.quota+1) // no report moves a client further than refused
	sh := l.shard(k)
	sh.mu.Lock()
	tat, found := sh.tat[k]
	// A client over its quota waits at most a window, whatever the reports say.
	tat = min(max(tat, now)+count*l.interval, now+l.window+l.interval)
	l.storeUnlock(sh, k, tat, found, now)
}

// stopSharing forgets what the sharing kept: counts that no report will carry any more.
func (l *limiter) stopSharing() {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		sh.shared, sh.touched = nil, nil
		sh.mu.Unlock()
	}
}

// report appends to b, for every client with requests admitted here since the last report, a
// record of tag, the client and their number, and forgets them.
func (l *limiter) report(b []byte, tag byte) []byte {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, k := range sh.touched {
			if e, ok := sh.shared[k]; ok && e.pending > 0 {
				b = append(b, tag)
				b = append(b, k[:]...)
				b = binary.BigEndian.AppendUint32(b, uint32(e.pending))
				e.pending = 0
				sh.shared[k] = e
			}
		}
		sh.touched = sh.touched[:0]
		sh.mu.Unlock()
	}
	return b
}

// peek reports what a request of client k at now would find, without counting one.
func (l *limiter) peek(k clientKey, now int64) decision { return l.look(k, now, false) }

// revalidated is peek for a request answered 304: not counted against the quota, it is tallied
// in the client's use.
func (l *limiter) revalidated(k clientKey, now int64) decision { return l.look(k, now, true) }

func (l *limiter) look(k clientKey, now int64, revalidated bool) decision {
	sh := l.shard(k)
	sh.mu.Lock()
	tat, found := sh.tat[k]
	if revalidated {
		l.tally(sh, k, useNotModified)
	}
	sh.mu.Unlock()
	if !found || tat < now {
		tat = now
	}
	return l.state(min(tat-now, l.window))
}

// state describes a client whose TAT is debt nanoseconds ahead of now (0 <= debt <= window):
// the window holds (window-debt)/interval more requests, and the next one frees up when the
// debt has shrunk to the following multiple of the interval.
func (l *limiter) state(debt int64) decision {
	room := l.window - debt
	return decision{allowed: true, remaining: room / l.interval, reset: l.interval - room%l.interval}
}

// shard returns the shard of k: the high bits of a keyed multiply-and-fold of its two halves.
// The maps inside hash the key again with their own seeds; this one only spreads clients over
// the locks, and its keys being secret keeps a client from crowding one shard on purpose.
func (l *limiter) shard(k clientKey) *limiterShard {
	a := binary.LittleEndian.Uint64(k[:8]) ^ l.seed[0] | 1
	b := binary.LittleEndian.Uint64(k[8:]) ^ l.seed[1] | 1
	hi, lo := bits.Mul64(a, b)
	return &l.shards[(hi^lo)>>(64-shardBits)]
}

// insert adds client k with tat to sh, whose lock is held, keeping the shard under its cap. It
// reports whether a live client had to be forgotten to make room.
func (l *limiter) insert(sh *limiterShard, k clientKey, tat, now int64) bool {
	if sh.tat == nil {
		sh.tat = make(map[clientKey]int64)
	}
	forgot := false
	if len(sh.tat) >= l.shardCap {
		forgot = makeRoom(sh, now)
	} else {
		sweep(sh, now, sweepSample)
	}
	sh.tat[k] = tat
	return forgot
}

// unreported says whether requests of k admitted here wait for their report to the other nodes:
// k must not be forgotten before.
func (sh *limiterShard) unreported(k clientKey) bool {
	return len(sh.shared) > 0 && sh.shared[k].pending > 0
}

// forget deletes client k.
func (sh *limiterShard) forget(k clientKey) {
	delete(sh.tat, k)
	if len(sh.shared) > 0 {
		delete(sh.shared, k)
	}
}

// sweep deletes the expired entries among the first n of the shard's (randomised) iteration
// order.
func sweep(sh *limiterShard, now int64, n int) {
	for k, tat := range sh.tat {
		if tat <= now && !sh.unreported(k) {
			sh.forget(k)
		}
		if n--; n == 0 {
			return
		}
	}
}

// makeRoom deletes at least one entry of the full shard: the expired ones among a sample, or,
// when all of them are live, the sampled client with the earliest TAT, the one that has the most
// of its quota left and so loses the least by being forgotten. It reports the latter case.
func makeRoom(sh *limiterShard, now int64) bool {
	var victim clientKey
	earliest := int64(math.MaxInt64)
	n, freed := 0, false
	for k, tat := range sh.tat {
		switch {
		case sh.unreported(k):
			// A client with requests not yet reported to the other nodes is kept: forgetting
			// it would lose them.
		case tat <= now:
			sh.forget(k)
			freed = true
		case tat < earliest:
			victim, earliest = k, tat
		}
		if n++; n == evictSample {
			break
		}
	}
	if freed {
		return false
	}
	if earliest == math.MaxInt64 {
		// Every sampled client waits for its report: the first of them goes all the same.
		for k := range sh.tat {
			victim = k
			break
		}
	}
	sh.forget(victim)
	return true
}

// size returns the number of entries held, for tests and reports.
func (l *limiter) size() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.tat)
		sh.mu.Unlock()
	}
	return n
}
