package webhook

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// mirror is an in-memory copy of the endpoints bucket, kept current by a KV watcher, so that
// routing a signal or a delivery costs no NATS round trip. Writes go to the bucket, never here.
type mirror struct {
	mu      sync.RWMutex
	bySlug  map[string]map[string]*endpointRecord // establishment → endpoint id → record; guarded by mu
	applied uint64                                // revision of the last entry applied; guarded by mu
	moved   chan struct{}                         // closed and replaced when applied rises; guarded by mu

	ready   chan struct{} // closed once the watcher has delivered every stored endpoint
	done    chan struct{} // closed when the watcher goroutine returns
	rewatch chan struct{} // asks the watcher goroutine to watch again (see Dispatcher.Reconnected)
}

// startMirror watches kv until ctx ends.
func startMirror(ctx context.Context, kv jetstream.KeyValue, logger *slog.Logger) (*mirror, error) {
	// Each watch has a context of its own, ended when it is replaced: the client keeps a goroutine
	// per watch until its context ends.
	wctx, stopWatch := context.WithCancel(ctx)
	w, err := kv.WatchAll(wctx)
	if err != nil {
		stopWatch()
		return nil, err
	}
	m := &mirror{
		bySlug:  make(map[string]map[string]*endpointRecord),
		moved:   make(chan struct{}),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		rewatch: make(chan struct{}, 1),
	}
	go func() {
		defer close(m.done)
		defer func() { stopWatch(); _ = w.Stop() }()
		caughtUp, failures := false, 0
		for {
			select {
			case <-ctx.Done():
				return
			case entry, ok := <-w.Updates():
				if !ok {
					return
				}
				if entry == nil {
					if !caughtUp {
						caughtUp = true
						close(m.ready)
					}
					continue
				}
				m.apply(entry, logger)
			case <-m.rewatch:
				m.mu.RLock()
				from := m.applied + 1
				m.mu.RUnlock()
				nctx, stopNew := context.WithCancel(ctx)
				nw, err := kv.WatchAll(nctx, jetstream.ResumeFromRevision(from))
				if err != nil {
					stopNew()
					if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrStreamNotFound) {
						logger.Error("webhook endpoints mirror: the bucket is gone", "err", err)
						continue
					}
					if failures++; failures%30 == 1 {
						logger.Warn("webhook endpoints mirror: watch not restarted yet, trying every second", "err", err)
					}
					time.AfterFunc(time.Second, m.again) // JetStream may not be back yet
					continue
				}
				failures = 0
				old, stopOld := w, stopWatch
				w, stopWatch = nw, stopNew
				_ = old.Stop()
				stopOld()
				go drain(old)
			}
		}
	}()
	return m, nil
}

// again asks the watcher goroutine to watch again, from the revision after the last applied.
func (m *mirror) again() {
	select {
	case m.rewatch <- struct{}{}:
	default:
	}
}

// drain reads what a stopped watcher still delivers, for at most a few seconds, so that its
// delivery goroutine never blocks.
func drain(w jetstream.KeyWatcher) {
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

// remove forgets an endpoint; m.mu is held.
func (m *mirror) remove(slug, id string) {
	if eps := m.bySlug[slug]; eps != nil {
		delete(eps, id)
		if len(eps) == 0 {
			delete(m.bySlug, slug)
		}
	}
}

func (m *mirror) apply(entry jetstream.KeyValueEntry, logger *slog.Logger) {
	slug, id, ok := strings.Cut(entry.Key(), ".")
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev := entry.Revision(); rev > m.applied {
		m.applied = rev
		close(m.moved)
		m.moved = make(chan struct{})
	}
	if entry.Operation() != jetstream.KeyValuePut {
		m.remove(slug, id)
		return
	}
	rec, err := decodeJSON[endpointRecord](entry.Value())
	if err != nil {
		logger.Error("skip undecodable endpoint", "key", entry.Key(), "err", err)
		return
	}
	if !rec.Removed.IsZero() {
		m.remove(slug, id)
		return
	}
	eps := m.bySlug[slug]
	if eps == nil {
		eps = make(map[string]*endpointRecord)
		m.bySlug[slug] = eps
	}
	eps[id] = &rec
}

// wait returns once the mirror holds every stored endpoint, or ctx's error.
func (m *mirror) wait(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// catchUp waits until the mirror has applied the bucket's revision rev, at most maxWait: a
// registration is then visible to this process's dispatcher when Register returns.
func (m *mirror) catchUp(ctx context.Context, rev uint64, maxWait time.Duration) {
	t := time.NewTimer(maxWait)
	defer t.Stop()
	for {
		m.mu.RLock()
		applied, moved := m.applied, m.moved
		m.mu.RUnlock()
		if applied >= rev {
			return
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}

// get returns one endpoint. Records are replaced, never modified, so the pointer stays valid.
func (m *mirror) get(slug, id string) (*endpointRecord, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rec, ok := m.bySlug[slug][id]
	return rec, ok
}

// endpoints returns the endpoints of an establishment, enabled or not.
func (m *mirror) endpoints(slug string) []*endpointRecord {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*endpointRecord, 0, len(m.bySlug[slug]))
	for _, rec := range m.bySlug[slug] {
		out = append(out, rec)
	}
	return out
}

// has reports whether slug has endpoints.
func (m *mirror) has(slug string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.bySlug[slug]) > 0
}

// counts returns how many endpoints there are, how many are disabled, failing, and waiting to
// be told about given-up changes.
func (m *mirror) counts() (total, disabled, failing, missed int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, eps := range m.bySlug {
		for _, rec := range eps {
			total++
			if rec.Disabled {
				disabled++
			}
			if rec.Failing != "" {
				failing++
			}
			if rec.Missed != nil {
				missed++
			}
		}
	}
	return total, disabled, failing, missed
}
