package generation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/runner"
)

// switchTo stops the projector of the current generation, brings the new generation level with
// the log and above the current one, and makes it current. Anything that stops it calls the
// switch off: the projector of the current generation goes on, and the next run resumes.
func (r *rebuilder) switchTo(ctx context.Context, b *building) error {
	asked := time.Now().UTC()
	if _, err := r.update(ctx, func(g *Record) error {
		if g.Rebuild == nil || g.Rebuild.Next != b.rb.Next {
			return errAbandoned
		}
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseSwitching, asked
		return nil
	}); err != nil {
		return err
	}
	l, err := r.takeProjectorLease(ctx)
	if err != nil {
		return r.callOff(ctx, b.rb, asked, err)
	}
	paused := time.Now()
	// Projection is paused from here: the switch has a deadline, past which it is called off.
	sctx, cancel := context.WithTimeoutCause(ctx, r.cfg.SwitchTimeout,
		fmt.Errorf("rebuild: the switch did not complete within %s (--switch-timeout); projection goes on with generation %d, run rebuild again", r.cfg.SwitchTimeout, b.rb.From))
	defer cancel()
	held := l.hold(sctx, nil)
	raised, err := r.switchPaused(sctx, b, held)
	_ = held.release()
	if err != nil {
		if context.Cause(sctx) != nil && sctx.Err() != nil {
			err = context.Cause(sctx)
		}
		return r.callOff(ctx, b.rb, asked, err)
	}
	r.say("switched to generation %d at position %d: projection paused %s, %d establishments raised above the old generation",
		b.rb.Next, b.pr.p.Position(), time.Since(paused).Round(time.Millisecond), raised)
	return nil
}

// takeProjectorLease waits for the projector of the current generation to stop and give up its
// lease, and takes it, within the handover timeout.
func (r *rebuilder) takeProjectorLease(ctx context.Context) (*lease, error) {
	leases, err := r.leases(ctx)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, r.cfg.Handover)
	defer cancel()
	l, err := waitLease(hctx, leases, ProjectorLease, rebuildHolder+r.cfg.Holder, 200*time.Millisecond, nil)
	if err != nil {
		return nil, fmt.Errorf("rebuild: the projector did not hand over within %s (--handover-timeout): %w", r.cfg.Handover, err)
	}
	return l, nil
}

// callOff calls off the switch asked for at asked, and returns cause.
func (r *rebuilder) callOff(ctx context.Context, rb Rebuilding, asked time.Time, cause error) error {
	if _, err := r.update(context.WithoutCancel(ctx), func(g *Record) error {
		if g.Rebuild != nil && g.Rebuild.Next == rb.Next && g.Rebuild.Phase == phaseSwitching && g.Rebuild.SwitchAsked.Equal(asked) {
			g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
		}
		return nil
	}); err != nil {
		r.cfg.Logger.Error("rebuild: the switch could not be called off", "err", err)
	}
	return cause
}

// switchPaused does the switch while projection is paused and the projector's lease held: the
// new generation takes in every record the old one's projector stored, raises what would go
// back, and becomes current at its last revision. It returns how many establishments it raised.
func (r *rebuilder) switchPaused(ctx context.Context, b *building, held *heldLease) (int, error) {
	if err := r.checkOldCheckpoint(ctx, b.rb); err != nil {
		return 0, err
	}
	// Every record the old generation's projector stored is in the log now: the new generation
	// takes them all in, then stops at a known position.
	p := b.pr.p
	last, err := r.store.LastStreamSequence(ctx)
	if err == nil {
		err = p.WaitFor(ctx, last)
	}
	if perr := b.pr.stop(); err == nil && !errors.Is(perr, context.Canceled) {
		err = perr
	}
	if err != nil {
		return 0, err
	}
	raised, err := p.Settle(ctx, b.rb.Position+1, p.Position())
	if err != nil {
		return 0, err
	}
	revision, err := lastRevision(ctx, r.js, b.newDocs)
	if err != nil {
		return 0, err
	}
	if err := held.lost(); err != nil {
		return 0, fmt.Errorf("rebuild: the projector's lease was lost during the switch: %w", err)
	}
	_, err = r.update(ctx, func(g *Record) error {
		if g.Rebuild == nil || g.Rebuild.Next != b.rb.Next {
			return errAbandoned
		}
		g.Current, g.SwitchRevision, g.Switched = b.rb.Next, revision, time.Now().UTC()
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseAnnouncing, time.Time{}
		return nil
	})
	return raised, err
}

// checkOldCheckpoint fails when the bundles of the old generation may have changed otherwise
// than through the records after rb.Position: its projector replayed the whole log meanwhile, or
// renders under another files URL.
func (r *rebuilder) checkOldCheckpoint(ctx context.Context, rb Rebuilding) error {
	_, oldState, err := r.generation(ctx, rb.From)
	if err != nil {
		return err
	}
	cp, ok, err := runner.ReadCheckpoint(ctx, oldState)
	if err != nil {
		return err
	}
	if !ok || cp.FilesURL != rb.FilesURL || !cp.Replayed.Equal(rb.Replayed) {
		return fmt.Errorf("rebuild: the projector of generation %d replayed the whole log, or renders under another files URL, since the rebuild began: run rebuild --abandon, then rebuild again", rb.From)
	}
	return nil
}

// lastRevision returns the revision of the last write to kv: what a read node holds of it before
// it serves it.
func lastRevision(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (uint64, error) {
	stream, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return 0, err
	}
	return stream.CachedInfo().State.LastSeq, nil
}
