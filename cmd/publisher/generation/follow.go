package generation

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// mirror is the read API's copy of the documents, as Follow keeps it on the generation served.
type mirror interface {
	// Prepare loads kv beside the generation served.
	Prepare(kv jetstream.KeyValue)
	// Switch serves kv once it holds revision rev.
	Switch(kv jetstream.KeyValue, rev uint64)
	// Abandon drops the generation prepared.
	Abandon()
}

// Follow keeps m on the generation of the documents current, from served, until ctx ends: it
// loads the one a rebuild builds beside it, and serves it once it is current. A process without
// the projector follows the generations so.
func (w *Watch) Follow(ctx context.Context, js jetstream.JetStream, m mirror, served int) error {
	prepared := 0
	for ctx.Err() == nil {
		g, changed := w.State()
		if n := g.Served(); n != served {
			if kv, ok := w.bind(ctx, js, n, func(g Record) bool { return g.Served() == n }); ok {
				m.Switch(kv, g.SwitchRevision)
				served, prepared = n, 0
			}
			continue
		}
		if n := g.preparing(); n != prepared {
			if n == 0 {
				m.Abandon()
				prepared = 0
			} else if kv, ok := w.bind(ctx, js, n, func(g Record) bool { return g.preparing() == n }); ok {
				m.Prepare(kv)
				prepared = n
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-changed:
		}
	}
	return nil
}

// bind binds to the documents of generation n, trying every second while the record still wants
// it; false when it no longer does, or ctx ended.
func (w *Watch) bind(ctx context.Context, js jetstream.JetStream, n int, wanted func(Record) bool) (jetstream.KeyValue, bool) {
	name, _ := runner.GenerationBuckets(n)
	for ctx.Err() == nil {
		kv, err := js.KeyValue(ctx, name)
		if err == nil {
			return kv, true
		}
		w.logger.Debug("mirror: generation not bound yet", "bucket", name, "err", err)
		if events.Sleep(ctx, time.Second) != nil {
			break
		}
		if g, _ := w.State(); !wanted(g) {
			break
		}
	}
	return nil, false
}
