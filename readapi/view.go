package readapi

import (
	"maps"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"
)

// view is one generation of the bucket as the mirror holds it.
type view struct {
	kv jetstream.KeyValue
	// index maps a slug to its slot, in indexShards maps by a hash of the slug. A published map
	// is never written again: adding a slug publishes a copy of its shard, one establishment in
	// indexShards, not of all of them. Updates and deletes of a known slug only store into its
	// slot.
	index   [indexShards]atomic.Pointer[map[string]*slot]
	applied atomic.Uint64 // bucket revision of the last entry whose effect is visible

	// What the current entries hold, for Stats; written by the watcher goroutine only.
	establishments, documentBytes, heldBytes atomic.Int64

	// Watcher goroutine only: the initial values are gathered in pending and published at once.
	caughtUp   bool
	pending    map[string]*slot
	pendingRev uint64
}

func newView(kv jetstream.KeyValue) *view {
	v := &view{kv: kv, pending: make(map[string]*slot)}
	for i := range v.index {
		v.index[i].Store(&map[string]*slot{})
	}
	return v
}

// indexShards is the number of maps the index is split into; a power of two. An establishment
// added after catch-up costs a copy of its shard: about 25 entries at 100,000 establishments,
// 250 at a million (256 shards spent 3 % of an import's CPU copying them at 100,000). Each
// shard costs an empty map when the view is made, 200 KB in all.
const indexShards = 4096

// shardOf returns the index shard of slug.
func shardOf(slug string) int { return int(xxhash.Sum64String(slug) & (indexShards - 1)) }

// slot holds the current entry of one establishment, nil after a delete, and the entry of its
// day ahead, nil when it has none (see Mirror.lookup).
type slot struct {
	current atomic.Pointer[served]
	ahead   atomic.Pointer[served]
	// held is the highest content_revision applied to this slug, kept across deletes so that
	// the mirror never goes back. Watcher goroutine only.
	held int64
}

// swap makes e, nil for none, the current entry of s; for the watcher goroutine.
func (v *view) swap(s *slot, e *served) { v.replace(&s.current, e, 1) }

// swapAhead makes e, nil for none, the entry of the day ahead of s; for the watcher goroutine.
func (v *view) swapAhead(s *slot, e *served) { v.replace(&s.ahead, e, 0) }

// replace stores e, nil for none, in p, counting each entry as establishments.
func (v *view) replace(p *atomic.Pointer[served], e *served, establishments int64) {
	if old := p.Swap(e); old != nil {
		v.establishments.Add(-establishments)
		v.documentBytes.Add(-int64(old.documentBytes()))
		v.heldBytes.Add(-int64(old.size))
	}
	if e != nil {
		v.establishments.Add(establishments)
		v.documentBytes.Add(int64(e.documentBytes()))
		v.heldBytes.Add(int64(e.size))
	}
}

func (v *view) stats() MirrorStats {
	return MirrorStats{
		Establishments: v.establishments.Load(),
		DocumentBytes:  v.documentBytes.Load(),
		HeldBytes:      v.heldBytes.Load(),
		Bucket:         v.kv.Bucket(),
	}
}

// slot returns the slot of slug, or nil; for the watcher goroutine.
func (v *view) slot(slug string) *slot {
	if !v.caughtUp {
		return v.pending[slug]
	}
	return (*v.index[shardOf(slug)].Load())[slug]
}

// addSlot adds a slug: in place while the initial values load (nothing is published yet), by
// publishing a copy of its shard afterwards, so that a published map is never written.
func (v *view) addSlot(slug string, s *slot) {
	if !v.caughtUp {
		v.pending[slug] = s
		return
	}
	shard := &v.index[shardOf(slug)]
	next := make(map[string]*slot, len(*shard.Load())+1)
	maps.Copy(next, *shard.Load())
	next[slug] = s
	shard.Store(&next)
}
