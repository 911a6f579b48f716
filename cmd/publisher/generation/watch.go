package generation

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// Watch keeps the last generations record a process saw, and wakes who waits for it to change.
type Watch struct {
	kv     jetstream.KeyValue
	logger *slog.Logger

	mu      sync.Mutex
	g       Record
	changed chan struct{} // closed and replaced when g changes; guarded by mu
	restart chan struct{}
}

// OpenWatch opens the generations bucket at replicas and reads its record; Run then follows
// its changes.
func OpenWatch(ctx context.Context, js jetstream.JetStream, replicas int, logger *slog.Logger) (*Watch, error) {
	kv, err := OpenBucket(ctx, js, replicas)
	if err != nil {
		return nil, err
	}
	g, _, err := Read(ctx, kv)
	if err != nil {
		return nil, err
	}
	return &Watch{kv: kv, logger: logger, g: g, changed: make(chan struct{}), restart: make(chan struct{}, 1)}, nil
}

// State returns the record as last seen and a channel closed when it changes.
func (w *Watch) State() (Record, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.g, w.changed
}

// Rewatch starts the watch again: after a reconnection, a watch whose consumer was lost would
// otherwise resume only once the client noticed.
func (w *Watch) Rewatch() {
	select {
	case w.restart <- struct{}{}:
	default:
	}
}

func (w *Watch) set(g Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.g = g
	close(w.changed)
	w.changed = make(chan struct{})
}

// Run follows the record until ctx ends.
func (w *Watch) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		wctx, stop := context.WithCancel(ctx)
		kw, err := w.kv.Watch(wctx, recordKey)
		if err != nil {
			stop()
			w.logger.Debug("generations: watch not started, trying again", "err", err)
			if events.Sleep(ctx, time.Second) != nil {
				return nil
			}
			continue
		}
		w.follow(ctx, kw)
		_ = kw.Stop()
		stop()
	}
	return nil
}

// follow applies the updates of kw until ctx ends, the watch is asked to start again, or kw
// stops.
func (w *Watch) follow(ctx context.Context, kw jetstream.KeyWatcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.restart:
			return
		case e, ok := <-kw.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue
			}
			var g Record
			if e.Operation() == jetstream.KeyValuePut {
				if err := json.Unmarshal(e.Value(), &g); err != nil {
					w.logger.Error("generations: record cannot be read", "err", err)
					continue
				}
			}
			w.set(g)
		}
	}
}
