package readapi

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// generationRequest is a call of Prepare (rev 0, switchNow false), Switch or Abandon (kv nil).
type generationRequest struct {
	kv        jetstream.KeyValue
	switchNow bool
	rev       uint64
	seq       uint64 // its number among the requests made
}

// Prepare starts loading kv, a later generation of the bucket, beside the one served.
func (m *Mirror) Prepare(kv jetstream.KeyValue) { m.ask(generationRequest{kv: kv}) }

// Switch serves kv, a later generation of the bucket, in place of the one served, as soon as the
// mirror holds every write to it up to revision rev: every establishment at once, none at a lower
// content_revision than it had (one that would go back keeps its entry, and its held revision).
func (m *Mirror) Switch(kv jetstream.KeyValue, rev uint64) {
	m.ask(generationRequest{kv: kv, switchNow: true, rev: rev})
}

// Abandon drops the generation prepared, if any.
func (m *Mirror) Abandon() { m.ask(generationRequest{}) }

// askAgain asks r again in a second, unless another request was made since r.
func (m *Mirror) askAgain(r generationRequest) {
	time.AfterFunc(time.Second, func() {
		if m.asked.Load() == r.seq {
			m.ask(r)
		}
	})
}

// ask passes r to Run, in place of any request it has not acted on yet: only the last counts.
func (m *Mirror) ask(r generationRequest) {
	r.seq = m.asked.Add(1)
	if m.request.Swap(&r) == nil {
		select {
		case m.requested <- struct{}{}:
		default:
		}
	}
}

// switchTo makes next, caught up, the view served in place of cur; for the watcher goroutine.
func (m *Mirror) switchTo(cur, next *view) {
	kept, gone := 0, 0
	for i := range next.index {
		for slug, s := range *next.index[i].Load() {
			old := (*cur.index[i].Load())[slug]
			if old == nil || old.held <= s.held {
				continue
			}
			// The new generation is behind what was served: the served entry stays until it
			// catches up.
			kept++
			s.held = old.held
			next.swap(s, old.current.Load())
		}
	}
	for i := range cur.index {
		for slug, s := range *cur.index[i].Load() {
			if (*next.index[i].Load())[slug] != nil {
				continue
			}
			// Not in the new generation: no longer served, its revision still held, so that a
			// bundle of it stored later is never older than what was served.
			if s.current.Load() != nil {
				gone++
			}
			next.addSlot(slug, &slot{held: s.held})
		}
	}
	m.next.Store(nil)
	m.cur.Store(next)
	select {
	case <-m.ready:
	default:
		close(m.ready) // switched before the first generation was loaded: the next one is
	}
	m.notify()
	m.logger.Info("bundle mirror: serving the next generation", "bucket", next.kv.Bucket(),
		"establishments", next.establishments.Load(), "was", cur.kv.Bucket())
	if kept > 0 || gone > 0 {
		m.logger.Warn("bundle mirror: the next generation is behind the one served", "kept_entries", kept, "establishments_gone", gone)
	}
}
