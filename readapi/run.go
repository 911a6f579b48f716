package readapi

import (
	"context"
	"errors"
	"fmt"
	"time"
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
		return fmt.Errorf("readapi: watch %s: %w", m.cur.Load().kv.Bucket(), err)
	}
	r := &runner{m: m, cur: cur, curUpdates: cur.updates}
	defer r.end()
	for r.step(ctx) {
		r.switchWhenCaughtUp()
	}
	return nil
}

// runner is the state of one Run: its watches, and the switch it was asked to make. Its methods
// run on Run's goroutine, the watcher goroutine.
type runner struct {
	m *Mirror

	cur *watching // the generation served
	// curUpdates is cur's deliveries, nil while there is no watch of the generation served (it
	// ended, or the generation is gone).
	curUpdates <-chan delivery

	next      *watching // the generation prepared, if any
	switchAt  uint64    // with switching, the revision of next to hold before serving it
	switching bool

	failures, nextFailures int // watches that could not start in a row, for the logs
}

// end stops the watches; cur's is already stopped when ctx ended.
func (r *runner) end() {
	r.cur.end()
	if r.next != nil {
		r.next.end()
	}
}

// step handles one delivery of a watch, one request or one rewatch; it reports false when Run is
// to return. Once ctx is done, Run reads on until the watch's channel closes, which it does once
// the watcher has closed its own; without a watch of the generation served, it returns at once.
func (r *runner) step(ctx context.Context) bool {
	var nextUpdates <-chan delivery
	if r.next != nil {
		nextUpdates = r.next.updates
	}
	var done <-chan struct{}
	if r.curUpdates == nil {
		done = ctx.Done()
	}
	select {
	case <-done:
		return false
	case d, ok := <-r.curUpdates:
		if !ok {
			return r.servedEnded(ctx)
		}
		if ctx.Err() == nil {
			r.m.apply(r.cur.v, d, true)
		}
	case d, ok := <-nextUpdates:
		if !ok {
			return r.nextEnded(ctx)
		}
		if ctx.Err() == nil {
			r.m.apply(r.next.v, d, false)
		}
	case <-r.m.requested:
		if req := r.m.request.Swap(nil); req != nil && ctx.Err() == nil {
			r.take(ctx, *req)
		}
	case <-r.m.rewatch:
		if ctx.Err() == nil {
			r.rewatch(ctx)
		}
	}
	return true
}

// servedEnded handles the end of the watch of the generation served; it reports false when Run
// is to return.
func (r *runner) servedEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	r.curUpdates = nil
	bucket := r.cur.v.kv.Bucket()
	if r.next == nil || !r.m.gone(ctx, r.cur.v.kv) {
		// Reads never stop: what the mirror holds is served while it watches again.
		r.m.logger.Warn("bundle mirror: the watch ended; serving what it holds while it watches again", "bucket", bucket)
		r.m.Rewatch()
		return true
	}
	// The generation served was removed after a switch this node has yet to make: what it holds
	// is served until then.
	r.m.logger.Warn("bundle mirror: the generation served is gone; serving what it holds until the next one is ready", "bucket", bucket)
	return true
}

// nextEnded handles the end of the watch of the generation prepared, which is prepared again; it
// reports false when Run is to return.
func (r *runner) nextEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	r.m.logger.Warn("bundle mirror: the watch of the next generation ended; it is prepared again", "bucket", r.next.v.kv.Bucket())
	kv := r.next.v.kv
	r.dropNext()
	r.m.askAgain(generationRequest{kv: kv, switchNow: r.switching, rev: r.switchAt, seq: r.m.asked.Load()})
	return true
}

// dropNext stops preparing the next generation, if any.
func (r *runner) dropNext() {
	if r.next != nil {
		r.next.end()
		r.next = nil
		r.m.next.Store(nil)
	}
}

// take acts on req, the last request made: it abandons the generation prepared, prepares
// another, or has it served as soon as it holds the revision asked.
func (r *runner) take(ctx context.Context, req generationRequest) {
	if req.kv == nil || req.kv.Bucket() == r.cur.v.kv.Bucket() {
		// Abandoned, or the generation served already.
		r.dropNext()
		r.switching = false
		return
	}
	if r.next == nil || r.next.v.kv.Bucket() != req.kv.Bucket() {
		if !r.prepare(ctx, req) {
			return
		}
	}
	if req.switchNow {
		r.switching, r.switchAt = true, req.rev
	}
}

// prepare starts loading req's generation in place of the one prepared, if any; it reports
// false when it cannot, and then asks again in a second unless the generation is gone.
func (r *runner) prepare(ctx context.Context, req generationRequest) bool {
	if r.next != nil {
		r.next.end()
	}
	r.switching, r.switchAt = false, 0 // nothing asked yet of this generation
	nw, err := watch(ctx, newView(req.kv), 1)
	if err != nil {
		r.next = nil
		r.m.next.Store(nil)
		if bucketGone(err) {
			r.m.logger.Warn("bundle mirror: the next generation is gone; not loaded", "bucket", req.kv.Bucket())
			return false
		}
		if r.nextFailures++; r.nextFailures%30 == 1 {
			r.m.logger.Warn("bundle mirror: the next generation cannot be watched yet, trying every second", "bucket", req.kv.Bucket(), "err", err)
		}
		r.m.askAgain(req)
		return false
	}
	r.nextFailures = 0
	r.next = nw
	r.m.next.Store(nw.v)
	r.m.logger.Info("bundle mirror: loading the next generation", "bucket", req.kv.Bucket())
	return true
}

// rewatch starts each watch again from the revision after the last it handled: the mirror skips
// what it has already. The two independently: either bucket may be gone. While one cannot start,
// it tries again in a second.
func (r *runner) rewatch(ctx context.Context) {
	again := !r.rewatchServed(ctx)
	if r.next != nil {
		if nn, err := watch(ctx, r.next.v, max(r.next.v.applied.Load(), r.next.v.pendingRev)+1); err == nil {
			r.next.end()
			r.next = nn
		} else if !bucketGone(err) {
			again = true
		}
	}
	if again {
		time.AfterFunc(time.Second, r.m.Rewatch)
	}
}

// rewatchServed starts the watch of the generation served again; it reports false when it is to
// be tried again.
func (r *runner) rewatchServed(ctx context.Context) bool {
	v := r.cur.v
	nw, err := watch(ctx, v, max(v.applied.Load(), v.pendingRev)+1)
	switch {
	case err == nil:
		r.failures = 0
		r.cur.end()
		r.cur, r.curUpdates = nw, nw.updates
	case bucketGone(err) && r.next != nil:
		// Removed after a switch to the next generation, which this node has yet to make.
		r.m.logger.Error("bundle mirror: the bucket is gone; serving what it holds", "err", err)
	default:
		// The server may not serve JetStream yet, or be loading its streams again (a restart,
		// room made on its volume): again in a second, what is held served meanwhile.
		if r.failures++; r.failures%30 == 1 {
			r.m.logger.Warn("bundle mirror: watch not restarted yet, trying every second", "err", err)
		}
		return false
	}
	return true
}

// switchWhenCaughtUp serves the generation prepared once it was asked to and holds every write
// up to the revision asked.
func (r *runner) switchWhenCaughtUp() {
	if !r.switching || r.next == nil || !r.next.v.caughtUp || r.next.v.applied.Load() < r.switchAt {
		return
	}
	r.m.switchTo(r.cur.v, r.next.v)
	r.cur.end()
	r.cur, r.next, r.switching, r.switchAt = r.next, nil, false, 0
	r.curUpdates = r.cur.updates
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
