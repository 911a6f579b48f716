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
}

type limiterShard struct {
	mu  sync.Mutex
	tat map[clientKey]int64
	_   [64 - 16]byte // one cache line per shard: no false sharing between locks
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
func (l *limiter) take(k clientKey, now int64) decision {
	sh := l.shard(k)
	sh.mu.Lock()
	tat, found := sh.tat[k]
	if !found || tat < now {
		tat = now // an expired entry is a full quota, as an absent one
	}
	next := tat + l.interval
	if next-now > l.window {
		sh.mu.Unlock()
		return decision{reset: next - l.window - now}
	}
	forgot := false
	if found {
		sh.tat[k] = next
	} else {
		forgot = l.insert(sh, k, next, now)
	}
	sh.mu.Unlock()
	if forgot {
		l.evicted.Add(1)
	}
	return l.state(next - now)
}

// peek reports what a request of client k at now would find, without counting one.
func (l *limiter) peek(k clientKey, now int64) decision {
	sh := l.shard(k)
	sh.mu.Lock()
	tat, found := sh.tat[k]
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
		forgot = makeRoom(sh.tat, now)
	} else {
		sweep(sh.tat, now, sweepSample)
	}
	sh.tat[k] = tat
	return forgot
}

// sweep deletes the expired entries among the first n of m's (randomised) iteration order.
func sweep(m map[clientKey]int64, now int64, n int) {
	for k, tat := range m {
		if tat <= now {
			delete(m, k)
		}
		if n--; n == 0 {
			return
		}
	}
}

// makeRoom deletes at least one entry of the full table m: the expired ones among a sample, or,
// when all of them are live, the sampled client with the earliest TAT, the one that has the most
// of its quota left and so loses the least by being forgotten. It reports the latter case.
func makeRoom(m map[clientKey]int64, now int64) bool {
	var victim clientKey
	earliest := int64(math.MaxInt64)
	n, freed := 0, false
	for k, tat := range m {
		if tat <= now {
			delete(m, k)
			freed = true
		} else if tat < earliest {
			victim, earliest = k, tat
		}
		if n++; n == evictSample {
			break
		}
	}
	if freed {
		return false
	}
	delete(m, victim)
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
