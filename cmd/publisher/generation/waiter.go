package generation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
)

// servingMirror is the read API's copy of the documents, as a Waiter waits for it to serve a
// revision.
type servingMirror interface {
	// WaitServing returns once the mirror serves bucket at revision rev or later.
	WaitServing(ctx context.Context, bucket string, rev uint64) error
}

// Waiter answers when a change is served: what ?wait=true on a write of the admin API waits for.
type Waiter struct {
	// Supervisor is the projector's supervision, nil in a process without the projector.
	Supervisor *Supervisor
	// Watch follows the generations record.
	Watch *Watch
	// JetStream binds the buckets of the generations.
	JetStream jetstream.JetStream
	// Mirror, nil in a process without the read API, is waited for too.
	Mirror servingMirror

	mu    sync.Mutex
	bound map[string]jetstream.KeyValue // the buckets bucketNamed bound, by name
}

// Served returns once the record at sequence seq of establishment slug is projected and, when
// this process serves the read API, in its mirror: a read on this node then answers with it.
func (w *Waiter) Served(ctx context.Context, slug domain.Slug, seq uint64) error {
	err := runner.ErrStopped
	var docs string // the generation the record is projected into
	if r := w.projecting(); r != nil {
		if err = r.p.WaitFor(ctx, seq); err == nil {
			docs, _ = runner.GenerationBuckets(r.generation)
		}
	}
	if errors.Is(err, runner.ErrStopped) {
		// Another process projects, or this one stopped for a switch of generations.
		docs, err = w.projectedElsewhere(ctx, seq)
	}
	if err != nil || w.Mirror == nil {
		return err
	}
	kv, err := w.bucketNamed(ctx, docs)
	if err != nil {
		return err
	}
	entry, err := kv.Get(ctx, dockey.Key(string(slug)))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil // nothing stored for it: nothing to serve
	}
	if err != nil {
		return fmt.Errorf("read the documents of %s: %w", slug, err)
	}
	return w.Mirror.WaitServing(ctx, kv.Bucket(), entry.Revision())
}

// projecting returns the projector this process runs, nil when none.
func (w *Waiter) projecting() *running {
	if w.Supervisor == nil {
		return nil
	}
	return w.Supervisor.projecting()
}

// projectedElsewhere returns, with the name of the generation of the documents it is projected
// into, once the projector of another process has checkpointed sequence seq (it does every few
// seconds), or ctx ends.
func (w *Waiter) projectedElsewhere(ctx context.Context, seq uint64) (string, error) {
	for {
		var (
			pos uint64
			ok  bool
		)
		g, _ := w.Watch.State()
		docs, stateName := runner.GenerationBuckets(g.Served())
		state, err := w.bucketNamed(ctx, stateName)
		if err == nil {
			pos, ok, err = runner.Projected(ctx, state)
		}
		if err == nil && ok && pos >= seq {
			return docs, nil
		}
		if err := events.Sleep(ctx, 250*time.Millisecond); err != nil {
			return "", fmt.Errorf("wait for sequence %d (checkpointed %d): %w", seq, pos, err)
		}
	}
}

// bucketNamed binds to the bucket name once: a handful of generations' buckets in a process's
// life.
func (w *Waiter) bucketNamed(ctx context.Context, name string) (jetstream.KeyValue, error) {
	w.mu.Lock()
	kv, ok := w.bound[name]
	w.mu.Unlock()
	if ok {
		return kv, nil
	}
	kv, err := w.JetStream.KeyValue(ctx, name)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound == nil {
		w.bound = make(map[string]jetstream.KeyValue)
	}
	w.bound[name] = kv
	return kv, nil
}
