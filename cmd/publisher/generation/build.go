package generation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/runner"
)

// building is the generation a rebuild builds, and the projector building it.
type building struct {
	rb               Rebuilding
	oldDocs, newDocs *runner.Bundles
	newState         jetstream.KeyValue
	pr               *runningProjector // nil until it starts
	rendered         atomic.Int64      // establishments rendered, as its progress says
	progress         func(done, total int)
}

// runningProjector is the rebuild's projector, running until stop.
type runningProjector struct {
	p    *runner.Projector
	stop func() error // stops it and returns what its Run returned; again, the same
}

// buildAndSwitch renders the log into generation rb.Next, verifies it, settles what changed
// meanwhile and switches to it.
func (r *rebuilder) buildAndSwitch(ctx context.Context, rb Rebuilding) error {
	b, err := r.openBuild(ctx, rb)
	if err != nil {
		return err
	}
	defer func() {
		if b.pr != nil {
			b.pr.stop()
		}
	}()
	if err := r.build(ctx, b); err != nil {
		return err
	}
	if err := r.verify(ctx, b); err != nil {
		return err
	}
	if err := r.settle(ctx, b); err != nil {
		return err
	}
	return r.switchTo(ctx, b)
}

// openBuild binds to the generation served and creates the next one. A switch an earlier run
// left asked for is called off: the projector goes on until this run is ready for it.
func (r *rebuilder) openBuild(ctx context.Context, rb Rebuilding) (*building, error) {
	oldDocs, _, err := r.generation(ctx, rb.From)
	if err != nil {
		return nil, err
	}
	newDocs, newState, err := runner.OpenGeneration(ctx, r.js, rb.Next, r.replicas)
	if err != nil {
		return nil, err
	}
	if rb.Phase == phaseSwitching {
		if _, err := r.update(ctx, func(g *Record) error {
			if g.Rebuild != nil {
				g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return &building{rb: rb, oldDocs: oldDocs, newDocs: newDocs, newState: newState}, nil
}

// build starts the projector of the new generation and waits until it holds every record of
// the log as it is now.
func (r *rebuilder) build(ctx context.Context, b *building) error {
	start := time.Now()
	show, end := r.cfg.Progress("rendered")
	b.progress = func(done, all int) {
		b.rendered.Store(int64(done))
		show(done, all)
	}
	pr, err := r.startProjector(ctx, b)
	if err != nil {
		end(false)
		return err
	}
	b.pr = pr
	err = r.caughtUp(ctx, b)
	end(err == nil)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if n := b.rendered.Load(); n > 0 {
		r.say("rendered %d establishments in %s (%.0f/s)", n, took.Round(time.Millisecond), float64(n)/max(took.Seconds(), 1e-9))
	} else {
		r.say("generation %d was rendered by an earlier run; it follows the log", b.rb.Next)
	}
	return nil
}

// startProjector runs a projector of the new generation, built against the old one.
func (r *rebuilder) startProjector(ctx context.Context, b *building) (*runningProjector, error) {
	p, err := runner.New(runner.Config{
		Store: r.store, KV: b.newDocs, State: b.newState, Replaces: b.oldDocs,
		Workers: r.cfg.Workers, CacheSize: r.cfg.Cache, SpillDir: r.cfg.SpillDir, FilesURL: b.rb.FilesURL,
		MaxValueSize: int(min(r.cfg.Conn.MaxPayload(), runner.MaxBundleSize)),
		Logger:       r.cfg.Logger.With("role", "rebuild"), Progress: b.progress,
	})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(pctx) }()
	var (
		once   sync.Once
		runErr error
	)
	return &runningProjector{p: p, stop: func() error {
		once.Do(func() {
			cancel()
			runErr = <-stopped
		})
		return runErr
	}}, nil
}

// caughtUp waits until the new generation holds every record of the log as it is now.
func (r *rebuilder) caughtUp(ctx context.Context, b *building) error {
	last, err := r.store.LastStreamSequence(ctx)
	if err != nil {
		return err
	}
	if err := b.pr.p.WaitFor(ctx, last); err != nil {
		if errors.Is(err, runner.ErrStopped) {
			return fmt.Errorf("rebuild: %w", b.pr.stop())
		}
		return err
	}
	return nil
}

// verify compares the new generation with the log's rendering, while it follows the log, against
// the records it has projected: nothing is switched to a generation that differs.
func (r *rebuilder) verify(ctx context.Context, b *building) error {
	start := time.Now()
	show, end := r.cfg.Progress("verified")
	rep, err := runner.Verify(ctx, runner.VerifyConfig{
		Log: r.store, KV: b.newDocs, Workers: r.cfg.VerifyWorkers, FilesURL: b.rb.FilesURL, Progress: show, Logger: r.cfg.Logger,
		UpTo: b.pr.p.Position(),
	})
	end(err == nil)
	if err != nil {
		return err
	}
	if rep.Different > 0 {
		for _, d := range rep.Differences {
			r.say("differs: %s: %s", d.Slug, d.Reason)
		}
		return fmt.Errorf("rebuild: generation %d differs from the log in %d establishments: nothing was switched (run rebuild again to resume, or rebuild --abandon)", b.rb.Next, rep.Different)
	}
	r.say("verified generation %d: %d establishments equal to the log's rendering, in %s", b.rb.Next, rep.Checked, time.Since(start).Round(time.Millisecond))
	return nil
}

// settle settles what the old generation's projector stored while the rebuild ran, while it goes
// on projecting: the switch then settles only what it stores from here on.
func (r *rebuilder) settle(ctx context.Context, b *building) error {
	_, oldState, err := r.generation(ctx, b.rb.From)
	if err != nil {
		return err
	}
	cp, ok, err := runner.ReadCheckpoint(ctx, oldState)
	if err != nil || !ok || cp.Position <= b.rb.Position {
		return err
	}
	start := time.Now()
	// Every record up to the old checkpoint taken in, so that the next round starts there.
	if err := b.pr.p.WaitFor(ctx, cp.Position); err != nil {
		return err
	}
	if err := b.pr.stop(); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("rebuild: %w", err)
	}
	raised, err := b.pr.p.Settle(ctx, b.rb.Position+1, b.pr.p.Position())
	if err != nil {
		return err
	}
	if _, err := r.update(ctx, func(g *Record) error {
		if g.Rebuild == nil || g.Rebuild.Next != b.rb.Next {
			return errAbandoned
		}
		g.Rebuild.Position = cp.Position
		return nil
	}); err != nil {
		return err
	}
	b.rb.Position = cp.Position
	pr, err := r.startProjector(ctx, b)
	if err != nil {
		return err
	}
	b.pr = pr
	if err := r.caughtUp(ctx, b); err != nil {
		return err
	}
	r.say("settled the changes made while the rebuild ran, up to position %d: %d establishments raised above the old generation, in %s",
		b.rb.Position, raised, time.Since(start).Round(time.Millisecond))
	return nil
}
