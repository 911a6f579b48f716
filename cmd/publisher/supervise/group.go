package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/opencarte/publisher/events"
)

// A failing loop never stops the others: each runs under supervise, which starts it again after a
// pause when it fails, and the read API keeps answering from memory meanwhile. The process exits
// only on a signal, or when it cannot start.
const (
	RestartPause    = time.Second      // the first pause before a failed loop starts again
	RestartMaxPause = 30 * time.Second // the pause doubles up to this
	// HealthyAfter is how long a loop started again runs without failing before it is no longer
	// reported degraded.
	HealthyAfter = 30 * time.Second
)

// Group is the loops of a process and what of it is degraded. Its zero value is not usable: make
// one with New.
type Group struct {
	logger *slog.Logger
	ctx    context.Context // the loops', ended by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errc   chan error

	mu       sync.Mutex
	degraded map[string]Degradation
}

// New returns a group that logs its loops' failures to logger.
func New(logger *slog.Logger) *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{logger: logger, ctx: ctx, cancel: cancel, errc: make(chan error, 8)}
}

// Go runs fn, named name in the log and the health reports, under supervise until Stop.
func (g *Group) Go(name string, fn func(context.Context) error) {
	g.wg.Go(func() { g.supervise(g.ctx, name, fn) })
}

// Stop ends the loops' context and waits for them, at most wait; it says whether they all
// returned.
func (g *Group) Stop(wait time.Duration) bool {
	g.cancel()
	stopped := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return true
	case <-time.After(wait):
		g.logger.Error("roles still running after being asked to stop; closing without them", "waited", wait)
		return false
	}
}

// Fatal reports a failure the process cannot go on without, such as a listener that stopped.
func (g *Group) Fatal(err error) { g.errc <- err }

// Err delivers what Fatal reports.
func (g *Group) Err() <-chan error { return g.errc }

// supervise runs fn until ctx ends. Each time fn fails, or panics, the failure is logged and
// recorded as degraded, and fn starts again after a pause (RestartPause, doubling up to
// RestartMaxPause); once it has run HealthyAfter without failing, it is no longer degraded and the
// pause starts over. It clears only what it recorded: a loop may report its own state under its
// name meanwhile (the projector standing by, say).
func (g *Group) supervise(ctx context.Context, name string, fn func(context.Context) error) {
	pause := RestartPause
	failed := false
	for ctx.Err() == nil {
		started := time.Now()
		var healthy *time.Timer
		if failed {
			healthy = time.AfterFunc(HealthyAfter, func() { g.Recovered(name) })
		}
		err := runRecovered(ctx, fn)
		if healthy != nil {
			healthy.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			// A loop that returns before its end is asked for stopped working all the same.
			err = errors.New("stopped")
		}
		if time.Since(started) >= HealthyAfter {
			pause = RestartPause
		}
		failed = true
		g.Fail(name, err)
		g.logger.Error("role failed; starting it again", "loop", name, "err", err, "in", pause)
		if events.Sleep(ctx, pause) != nil {
			return
		}
		pause = min(2*pause, RestartMaxPause)
	}
}

// runRecovered runs fn, and returns a panic of its goroutine as an error with the stack.
func runRecovered(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return fn(ctx)
}
