package generation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// servedSubject is where read nodes answer which generation of the documents they serve.
const servedSubject = "publisher.documents.served"

// finish ends a rebuild once its generation is served: it announces the establishments whose
// documents the switch changed, removes the old generation once no read node serves it, then
// the rebuild record. An earlier run may have done the first two already.
func (r *rebuilder) finish(ctx context.Context, rb Rebuilding) error {
	newDocs, _, err := r.generation(ctx, rb.Next)
	if err != nil {
		return err
	}
	oldDocsName, oldStateName := runner.GenerationBuckets(rb.From)
	oldDocs, err := r.js.KeyValue(ctx, oldDocsName)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		// Announced and removed by an earlier run; its state bucket may remain.
		if err := r.remove(ctx, oldStateName); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := r.announce(ctx, rb, oldDocs, newDocs); err != nil {
			return err
		}
		if err := r.awaitReadNodes(ctx, newDocs.Bucket()); err != nil {
			return err
		}
		if err := r.remove(ctx, oldStateName, oldDocsName); err != nil { // the documents last: see above
			return err
		}
		r.say("removed generation %d (%s, %s)", rb.From, oldDocsName, oldStateName)
	}
	if _, err := r.update(ctx, func(g *Record) error {
		if g.Rebuild != nil && g.Rebuild.Next == rb.Next {
			g.Rebuild = nil
		}
		return nil
	}); err != nil {
		return err
	}
	r.say("done: generation %d is served", rb.Next)
	return nil
}

// announce tells the webhooks of every establishment whose documents the switch from oldDocs to
// newDocs changed.
func (r *rebuilder) announce(ctx context.Context, rb Rebuilding, oldDocs, newDocs jetstream.KeyValue) error {
	signals, err := events.OpenSignals(ctx, r.cfg.Conn, r.replicas)
	if err != nil {
		return err
	}
	start := time.Now()
	show, end := r.cfg.Progress("compared")
	n, err := runner.AnnounceSwitch(ctx, runner.AnnounceConfig{
		Old: oldDocs, New: newDocs, Notifier: SignalNotifier{Signals: signals}, Since: rb.Position, Progress: show, Logger: r.cfg.Logger,
	})
	end(err == nil)
	if err != nil {
		return fmt.Errorf("rebuild: %w (run rebuild again to resume)", err)
	}
	r.say("announced %d establishments whose documents changed, in %s", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// remove removes the buckets named, in this order; one already gone is no error.
func (r *rebuilder) remove(ctx context.Context, names ...string) error {
	for _, name := range names {
		if err := r.js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("rebuild: remove %s: %w", name, err)
		}
	}
	return nil
}

// awaitReadNodes returns once every read node that answers serves the bucket want, or fails after
// the handover timeout: the old generation is removed only once no read node serves it.
func (r *rebuilder) awaitReadNodes(ctx context.Context, want string) error {
	deadline := time.Now().Add(r.cfg.Handover)
	for {
		served, err := r.askServed(ctx)
		if err != nil {
			return err
		}
		behind := 0
		for _, b := range served {
			if b != want {
				behind++
			}
		}
		if behind == 0 {
			r.say("%d read nodes serve generation %s", len(served), want)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rebuild: %d of %d read nodes still serve another generation after %s: the old one is kept (run rebuild again to remove it)", behind, len(served), r.cfg.Handover)
		}
		if err := events.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// askServed asks every read node which bucket it serves and gathers the answers that come within
// a short while.
func (r *rebuilder) askServed(ctx context.Context) ([]string, error) {
	nc := r.cfg.Conn
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(servedSubject, inbox, nil); err != nil {
		return nil, err
	}
	var served []string
	until := time.Now().Add(300 * time.Millisecond)
	for {
		wait := time.Until(until)
		if wait <= 0 || ctx.Err() != nil {
			return served, ctx.Err()
		}
		msg, err := sub.NextMsg(wait)
		if errors.Is(err, nats.ErrTimeout) {
			return served, nil
		}
		if err != nil {
			return served, err
		}
		served = append(served, string(msg.Data))
	}
}

// AnswerServed has a read node answer a rebuild's question on nc: the name of the bucket of
// documents it serves, as bucket returns it. A rebuild removes the old generation once no read
// node serves it.
func AnswerServed(nc *nats.Conn, bucket func() string) error {
	_, err := nc.Subscribe(servedSubject, func(msg *nats.Msg) {
		_ = msg.Respond([]byte(bucket()))
	})
	return err
}
