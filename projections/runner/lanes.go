package runner

import (
	"context"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/opencarte/publisher/events"
)

// recordSlug names the establishment of a record, for fanOut.
func recordSlug(rec events.Record) string { return rec.Establishment }

// laneQueue is how many records wait for each worker; with the records being handled, it bounds
// what the projector holds beyond its model.
const laneQueue = 64

// laneOf returns the worker of the establishment slug among n: always the same one, so that the
// records of one establishment are projected in the order of the log.
func laneOf(slug string, n int) int { return int(xxhash.Sum64String(slug) % uint64(n)) }

// fanOut runs source, which passes items (records of the log, in its order, or establishments'
// slugs) to dispatch; each item is handled by work on the worker of its establishment, named by
// slugOf, with that worker's share of the establishments. It returns once source returned and
// every dispatched item was handled: the first failure of work or source, if any (the other
// workers then stop, dispatch fails with the context's error, and later items are not handled),
// otherwise source's result.
func fanOut[W, I any](ctx context.Context, workers []W, slugOf func(I) string,
	work func(context.Context, W, I) error,
	source func(ctx context.Context, dispatch func(I) error) (uint64, error),
) (uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once    sync.Once
		failure error
		wg      sync.WaitGroup
	)
	queues := make([]chan I, len(workers))
	for i, w := range workers {
		q := make(chan I, laneQueue)
		queues[i] = q
		wg.Go(func() {
			for item := range q {
				if ctx.Err() != nil {
					continue // stopping: what is queued is dropped
				}
				if err := work(ctx, w, item); err != nil {
					once.Do(func() { failure = err; cancel() })
				}
			}
		})
	}
	dispatch := func(item I) error {
		select {
		case queues[laneOf(slugOf(item), len(queues))] <- item:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	last, err := source(ctx, dispatch)
	if err != nil {
		// The first failure wins, the source's or a worker's, and stops the others: the records
		// still queued are not handled, and a worker retrying a write would otherwise keep Run
		// from returning the source's failure.
		once.Do(func() { failure = err; cancel() })
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	if failure != nil {
		return last, failure
	}
	return last, err
}

// watermark tells how far the log is projected when records finish out of order: up to the
// last sequence before which every dispatched record finished.
type watermark struct {
	mu      sync.Mutex
	pending []uint64            // dispatched and not yet passed, in the order of the log
	done    map[uint64]struct{} // finished, still behind an unfinished one
}

func newWatermark() *watermark { return &watermark{done: make(map[uint64]struct{})} }

// add records that seq is dispatched; sequences are added in increasing order.
func (w *watermark) add(seq uint64) {
	w.mu.Lock()
	w.pending = append(w.pending, seq)
	w.mu.Unlock()
}

// finish records that seq is handled and returns the sequence the projection reached, with false
// while an earlier record is still being handled.
func (w *watermark) finish(seq uint64) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done[seq] = struct{}{}
	var reached uint64
	moved := false
	for len(w.pending) > 0 {
		s := w.pending[0]
		if _, ok := w.done[s]; !ok {
			break
		}
		delete(w.done, s)
		w.pending = w.pending[1:]
		reached, moved = s, true
	}
	return reached, moved
}
