package usage

import (
	"math"
	"time"
)

// buckets is the number of parts a window is counted in: a minute each for an hour.
const buckets = 60

// Samples taken from the table, in the map's randomised iteration order, when a key is added:
// sweepSample entries are checked for expiry below the bound, evictSample at the bound.
const (
	sweepSample = 2
	evictSample = 8
)

// Indexes of the counts in a bucket.
const (
	requests = iota
	notModified
	limited
)

// history is one key's counts over the last window, one bucket per buckets-th of it, in a ring.
type history struct {
	newest int64              // the number of the newest bucket, which starts at newest × width, Unix time
	counts [buckets][3]uint32 // by bucket number modulo buckets; requests, 304s and 429s
}

// add counts c in bucket b, which must be after newest-buckets: the buckets between the newest
// and b start empty.
func (h *history) add(b int64, c Counts) {
	for i := h.newest + 1; i <= b && i <= h.newest+buckets; i++ {
		h.counts[i%buckets] = [3]uint32{}
	}
	h.newest = max(h.newest, b)
	slot := &h.counts[b%buckets]
	slot[requests] = saturated(slot[requests], c.Requests)
	slot[notModified] = saturated(slot[notModified], c.NotModified)
	slot[limited] = saturated(slot[limited], c.Limited)
}

func saturated(a uint32, b int64) uint32 {
	return uint32(min(int64(a)+max(b, 0), math.MaxUint32))
}

// sum returns the counts of the window that ends with bucket now.
func (h *history) sum(now int64) Counts {
	var c Counts
	for i := max(h.newest-buckets+1, now-buckets+1, 0); i <= min(h.newest, now); i++ {
		s := &h.counts[i%buckets]
		c.Requests += int64(s[requests])
		c.NotModified += int64(s[notModified])
		c.Limited += int64(s[limited])
	}
	return c
}

// expired says whether every count of h has left the window that ends with bucket now.
func (h *history) expired(now int64) bool { return h.newest <= now-buckets }

// table holds the histories of at most max keys.
type table struct {
	width   int64 // a bucket's length in ns
	max     int
	keys    map[Key]*history
	evicted int // histories forgotten at the bound since the last warning
}

func newTable(window time.Duration, maxKeys int) table {
	return table{width: max(int64(window)/buckets, 1), max: maxKeys, keys: make(map[Key]*history)}
}

// bucket is the number of the bucket at holds.
func (t *table) bucket(at time.Time) int64 { return at.UnixNano() / t.width }

// add counts c of key k in bucket b, now being the current bucket. Counts already out of the
// window are dropped, and a key is added only for counts that are not all zero.
func (t *table) add(k Key, b, now int64, c Counts) {
	if b <= now-buckets || b > now {
		return
	}
	h := t.keys[k]
	if h == nil {
		if c == (Counts{}) {
			return
		}
		t.makeRoom(now)
		h = &history{newest: b}
		t.keys[k] = h
	}
	h.add(b, c)
}

// sum returns the counts of k in the window that ends with bucket now.
func (t *table) sum(k Key, now int64) Counts {
	h := t.keys[k]
	if h == nil {
		return Counts{}
	}
	return h.sum(now)
}

// makeRoom deletes the expired histories among a few sampled before a key is added and, at the
// bound, at least one: if none of evictSample sampled is expired, the one whose newest count is
// the oldest, which is then counted in evicted.
func (t *table) makeRoom(now int64) {
	full := len(t.keys) >= t.max
	sample := sweepSample
	if full {
		sample = evictSample
	}
	var victim Key
	oldest := int64(math.MaxInt64)
	freed := false
	for k, h := range t.keys {
		switch {
		case h.expired(now):
			delete(t.keys, k)
			freed = true
		case h.newest < oldest:
			victim, oldest = k, h.newest
		}
		if sample--; sample == 0 {
			break
		}
	}
	if full && !freed {
		delete(t.keys, victim)
		t.evicted++
	}
}
