package readapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencarte/publisher/projections/dockey"
)

// Run watches the bucket and applies every bundle to the mirror until ctx is done, then returns
// nil. It returns an error when the watch cannot start. A watch that ends on its own (the
// connection closed, the server gone) is started again every second from the revision after the
// last one applied, while what the mirror holds goes on being served. One Run at a time; a Run
// that returned may be called again.
func (m *Mirror) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("readapi: mirror is already running")
	}
	defer m.running.Store(false) // a Run that could not start its watch may be started again
	cur, err := watch(ctx, m.cur.Load(), 1)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("readapi: watch %s: %w", dockey.Watch, err)
	}
	var (
		next      *watching // the generation prepared, if any
		switchAt  uint64    // with switching, the revision of next to hold before serving it
		switching bool
	)
	defer func() {
		cur.end() // already stopped when ctx ended
		if next != nil {
			next.end()
		}
	}()
	failures, nextFailures := 0, 0
	// Once ctx is done, Run reads on until the watch's channel closes, which it does once the
	// watcher has closed its own; without a watch (it ended, or the generation served is gone),
	// it returns at once.
	curUpdates := cur.updates // nil while there is no watch of the generation served
	for {
		var nextUpdates <-chan delivery
		if next != nil {
			nextUpdates = next.updates
		}
		var done <-chan struct{}
		if curUpdates == nil {
			done = ctx.Done()
		}
		select {
		case <-done:
			return nil
		case d, ok := <-curUpdates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				if next == nil || !m.gone(ctx, cur.v.kv) {
					// Reads never stop: what the mirror holds is served while it watches again.
					m.logger.Warn("bundle mirror: the watch ended; serving what it holds while it watches again", "bucket", cur.v.kv.Bucket())
					curUpdates = nil
					m.Rewatch()
					continue
				}
				// The generation served was removed after a switch this node has yet to make:
				// what it holds is served until then.
				m.logger.Warn("bundle mirror: the generation served is gone; serving what it holds until the next one is ready", "bucket", cur.v.kv.Bucket())
				curUpdates = nil
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			m.apply(cur.v, d, true)
		case d, ok := <-nextUpdates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				m.logger.Warn("bundle mirror: the watch of the next generation ended; it is prepared again", "bucket", next.v.kv.Bucket())
				kv := next.v.kv
				next.end()
				next = nil
				m.next.Store(nil)
				m.askAgain(generationRequest{kv: kv, switchNow: switching, rev: switchAt, seq: m.asked.Load()})
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			m.apply(next.v, d, false)
		case <-m.requested:
			req := m.request.Swap(nil)
			if ctx.Err() != nil || req == nil {
				continue
			}
			if req.kv == nil || req.kv.Bucket() == cur.v.kv.Bucket() {
				// Abandoned, or the generation served already.
				if next != nil {
					next.end()
					next = nil
					m.next.Store(nil)
				}
				switching = false
				continue
			}
			if next == nil || next.v.kv.Bucket() != req.kv.Bucket() {
				if next != nil {
					next.end()
				}
				switching, switchAt = false, 0 // nothing asked yet of this generation
				nw, err := watch(ctx, newView(req.kv), 1)
				if err != nil {
					next = nil
					m.next.Store(nil)
					if bucketGone(err) {
						m.logger.Warn("bundle mirror: the next generation is gone; not loaded", "bucket", req.kv.Bucket())
						continue
					}
					if nextFailures++; nextFailures%30 == 1 {
						m.logger.Warn("bundle mirror: the next generation cannot be watched yet, trying every second", "bucket", req.kv.Bucket(), "err", err)
					}
					m.askAgain(*req)
					continue
				}
				nextFailures = 0
				next = nw
				m.next.Store(nw.v)
				m.logger.Info("bundle mirror: loading the next generation", "bucket", req.kv.Bucket())
			}
			if req.switchNow {
				switching, switchAt = true, req.rev
			}
		case <-m.rewatch:
			if ctx.Err() != nil {
				continue
			}
			// Each watch from the revision after the last it handled: the mirror skips what it
			// has already. The two independently: either bucket may be gone.
			again := false
			if nw, err := watch(ctx, cur.v, max(cur.v.applied.Load(), cur.v.pendingRev)+1); err == nil {
				failures = 0
				cur.end()
				cur, curUpdates = nw, nw.updates
			} else if bucketGone(err) && next != nil {
				// Removed after a switch to the next generation, which this node has yet to make.
				m.logger.Error("bundle mirror: the bucket is gone; serving what it holds", "err", err)
			} else {
				// The server may not serve JetStream yet, or be loading its streams again (a
				// restart, room made on its volume): again in a second, what is held served
				// meanwhile.
				if failures++; failures%30 == 1 {
					m.logger.Warn("bundle mirror: watch not restarted yet, trying every second", "err", err)
				}
				again = true
			}
			if next != nil {
				if nn, err := watch(ctx, next.v, max(next.v.applied.Load(), next.v.pendingRev)+1); err == nil {
					next.end()
					next = nn
				} else if !bucketGone(err) {
					again = true
				}
			}
			if again {
				time.AfterFunc(time.Second, m.Rewatch)
			}
		}
		if switching && next != nil && next.v.caughtUp && next.v.applied.Load() >= switchAt {
			m.switchTo(cur.v, next.v)
			cur.end()
			cur, next, switching, switchAt = next, nil, false, 0
			curUpdates = cur.updates
		}
	}
}

// Rewatch makes Run start its watches again from the revision after the last each handled. Called
// when the connection came back: a watch whose consumer was lost with its server would otherwise
// resume only once the client noticed the missing heartbeats, a quarter of a minute later, the
// mirror serving what it held meanwhile.
func (m *Mirror) Rewatch() {
	select {
	case m.rewatch <- struct{}{}:
	default: // one is pending already
	}
}
