package generation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// ProjectorLease is the name of the lease the projector runs under, and of the part of the
// process Health hears about.
const ProjectorLease = "projector"

// Health hears what of the process is degraded: the projector that failed, or cannot take its
// lease, and once it works again.
type Health interface {
	Fail(part string, err error)
	Recovered(part string)
}

// Config is what the projector's supervision needs from the process.
type Config struct {
	// JetStream opens the buckets of each generation and the leases, at Replicas.
	JetStream jetstream.JetStream
	Replicas  int
	// Watch follows the generations record.
	Watch *Watch
	// Holder names this process in the lease.
	Holder string
	// Embedded says the NATS server serves this process alone: a lease that names no rebuild is
	// then of an earlier run of it, which cannot renew it any more.
	Embedded bool
	// New returns the projector of the generation whose buckets are docs and state.
	New func(docs *runner.Bundles, state jetstream.KeyValue) (*runner.Projector, error)
	// Provision runs open, which creates or binds what names, until it succeeds or fails for
	// good (a cluster may still be forming).
	Provision func(ctx context.Context, what string, open func(context.Context) error) error
	Health    Health
	Logger    *slog.Logger
	// Pause is the first pause after the projector fails, doubled up to MaxPause; a projector
	// that ran Healthy is no longer reported degraded, and the pause starts over.
	Pause, MaxPause, Healthy time.Duration
}

// Validate reports a Config missing what the supervision cannot run without.
func (c *Config) Validate() error {
	if c.JetStream == nil || c.Watch == nil || c.New == nil || c.Provision == nil || c.Health == nil || c.Logger == nil {
		return errors.New("generation: JetStream, Watch, New, Provision, Health and Logger are required")
	}
	if c.Pause <= 0 || c.MaxPause < c.Pause || c.Healthy <= 0 {
		return errors.New("generation: want 0 < Pause <= MaxPause and Healthy > 0")
	}
	return nil
}

// Supervisor runs the projector. Several processes may have the role (on a cluster), and a
// rebuild may need it stopped: one process at a time runs it, under a lease. A process that
// finds it held stands by and takes over once its holder stops renewing it. A process whose
// projector fails or loses its lease stops it, stands by, and projects again once it takes the
// lease again: it never ends the process, whose read API goes on serving what is projected. When
// a rebuild asks for the switch to the generation it built, the projector stops and gives up its
// lease, then takes it again and projects into the generation that is then current.
type Supervisor struct {
	cfg    Config
	leases jetstream.KeyValue
	// running is the projector this process runs, nil while it runs none.
	running atomic.Pointer[running]
	// start is what Start found for Run: the lease taken and the first projector, if any.
	start struct {
		lease *lease
		first *running
	}
}

// running is a projector and the generation it projects into.
type running struct {
	p          *runner.Projector
	generation int
}

// NewSupervisor returns the supervision of the projector that cfg describes.
func NewSupervisor(cfg Config) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Supervisor{cfg: cfg}, nil
}

// Projector returns the projector this process runs, nil when it runs none (another process
// holds the lease, or a rebuild is switching generations).
func (s *Supervisor) Projector() *runner.Projector {
	if r := s.running.Load(); r != nil {
		return r.p
	}
	return nil
}

// projecting returns the projector this process runs and its generation, nil when it runs none.
func (s *Supervisor) projecting() *running { return s.running.Load() }

// Start opens the leases and tries the lease once: when it is free, and no rebuild is switching
// generations, Projector is set when Start returns. Run then supervises the projector.
func (s *Supervisor) Start(ctx context.Context) error {
	err := s.cfg.Provision(ctx, "the leases bucket", func(ctx context.Context) error {
		var err error
		s.leases, err = OpenLeases(ctx, s.cfg.JetStream, s.cfg.Replicas)
		return err
	})
	if err != nil {
		return err
	}
	l, err := s.firstLease(ctx)
	if err != nil || l == nil {
		return nil // Run stands by
	}
	g, _ := s.cfg.Watch.State()
	if g.switching() { // Run stands aside
		l.release(ctx)
		return nil
	}
	first, err := s.open(ctx, g.Served())
	if err != nil {
		l.release(ctx)
		return err
	}
	s.running.Store(first)
	s.start.lease, s.start.first = l, first
	return nil
}

// firstLease tries to take the lease. With the embedded server, which serves this process alone,
// a lease it holds is of this process before a restart, which cannot renew it any more: it is
// taken at once, unless a rebuild holds it.
func (s *Supervisor) firstLease(ctx context.Context) (*lease, error) {
	l, _, err := tryLease(ctx, s.leases, ProjectorLease, s.cfg.Holder)
	if !s.cfg.Embedded || l != nil || err != nil {
		return l, err
	}
	e, gerr := s.leases.Get(ctx, ProjectorLease)
	if gerr == nil && !strings.HasPrefix(string(e.Value()), rebuildHolder) {
		if s.leases.Delete(ctx, ProjectorLease, jetstream.LastRevision(e.Revision())) == nil {
			l, _, err = tryLease(ctx, s.leases, ProjectorLease, s.cfg.Holder)
		}
	}
	return l, err
}

// open provisions the buckets of generation n and returns its projector.
func (s *Supervisor) open(ctx context.Context, n int) (*running, error) {
	var p *runner.Projector
	err := s.cfg.Provision(ctx, "the projector's buckets", func(ctx context.Context) error {
		docs, state, err := OpenBuckets(ctx, s.cfg.JetStream, n, s.cfg.Replicas)
		if err != nil {
			return err
		}
		p, err = s.cfg.New(docs, state)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &running{p: p, generation: n}, nil
}

// Run runs the projector of the current generation while this process holds the lease, and
// starts again on the generation current after a switch, until ctx ends.
func (s *Supervisor) Run(ctx context.Context) error {
	l, first := s.start.lease, s.start.first
	s.start.lease, s.start.first = nil, nil
	var grace switchGraceClock
	pause := s.cfg.Pause
	for {
		if l == nil {
			var err error
			if l, err = s.standBy(ctx, &grace); err != nil {
				return nil // stopped while standing by
			}
		}
		// The record as it stands now, not as last watched: the generation to project is the
		// one current once the lease is held.
		g, _ := s.cfg.Watch.State()
		if now, _, err := Read(ctx, s.cfg.Watch.kv); err == nil {
			g = now
		}
		if grace.left(g) > 0 {
			l.release(ctx)
			l, first = nil, nil
			continue
		}
		r := first
		first = nil
		if r == nil || r.generation != g.Served() {
			var err error
			if r, err = s.open(ctx, g.Served()); err != nil {
				l.release(ctx)
				l = nil
				if !s.failed(ctx, err, &pause) {
					return nil
				}
				continue
			}
		}
		err := s.project(ctx, l, r, g, &pause)
		l = nil
		if ctx.Err() != nil || err != nil && !s.failed(ctx, err, &pause) {
			return nil
		}
	}
}

// project runs r under l until ctx ends, the projector fails or loses l, or a switch of
// generations stops it; it returns the failure, nil otherwise. It resets *pause once the
// projector ran Healthy.
func (s *Supervisor) project(ctx context.Context, l *lease, r *running, g Record, pause *time.Duration) error {
	s.running.Store(r)
	started := time.Now()
	pctx, stop := context.WithCancel(ctx)
	var stepped atomic.Bool
	go func() {
		if s.awaitStep(pctx, g) {
			stepped.Store(true)
			stop()
		}
	}()
	healthy := time.AfterFunc(s.cfg.Healthy, func() { s.cfg.Health.Recovered(ProjectorLease) })
	err := runLeased(pctx, l, r.p.Run)
	healthy.Stop()
	stop()
	s.running.CompareAndSwap(r, nil)
	switch {
	case ctx.Err() != nil:
		return nil
	case stepped.Load():
		s.cfg.Logger.Info("projector stopped: the documents switch generations", "role", ProjectorLease, "generation", g.Served())
		return nil
	}
	if err == nil {
		err = errors.New("stopped")
	}
	if time.Since(started) >= s.cfg.Healthy {
		*pause = s.cfg.Pause
	}
	return err
}

// awaitStep returns true once another generation than g's became current, or a rebuild asks for
// the switch anew: the projector of g is to stop. It returns false when ctx ends first.
func (s *Supervisor) awaitStep(ctx context.Context, g Record) bool {
	for {
		now, changed := s.cfg.Watch.State()
		asked := now.switching() && (!g.switching() || !now.Rebuild.SwitchAsked.Equal(g.Rebuild.SwitchAsked))
		if now.Served() != g.Served() || asked {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// failed reports the projector's failure, degraded until it projects again, and waits *pause
// before it stands by for its lease again, doubling *pause up to MaxPause; false when ctx ended
// meanwhile.
func (s *Supervisor) failed(ctx context.Context, err error, pause *time.Duration) bool {
	s.cfg.Health.Fail(ProjectorLease, err)
	s.cfg.Logger.Error("projector stopped; standing by to take its lease again", "role", ProjectorLease, "err", err, "in", *pause)
	if events.Sleep(ctx, *pause) != nil {
		return false
	}
	*pause = min(2**pause, s.cfg.MaxPause)
	return true
}

// standBy returns the lease once no rebuild is switching generations and this process took it,
// or fails when ctx ends.
func (s *Supervisor) standBy(ctx context.Context, grace *switchGraceClock) (*lease, error) {
	if err := s.awaitNoSwitch(ctx, grace); err != nil {
		return nil, err
	}
	return s.awaitLease(ctx)
}

// awaitLease returns the lease once this process has it, saying once that it stands by.
func (s *Supervisor) awaitLease(ctx context.Context) (*lease, error) {
	said := false
	l, err := waitLease(ctx, s.leases, ProjectorLease, s.cfg.Holder, leasePoll, func(other string, err error) {
		if err != nil {
			// The lease cannot even be read or written (NATS away, its storage full): the role is
			// degraded until it can.
			s.cfg.Health.Fail(ProjectorLease, fmt.Errorf("lease not taken: %w", err))
			s.cfg.Logger.Debug("lease: not taken", "role", ProjectorLease, "err", err)
			return
		}
		// Another process runs the role: standing by is this process's part, not a fault.
		s.cfg.Health.Recovered(ProjectorLease)
		if !said {
			s.cfg.Logger.Info("standing by: another process runs the role", "role", ProjectorLease, "holder", other)
			said = true
		}
	})
	if l != nil && said {
		s.cfg.Logger.Info("lease taken over: this process now runs the role", "role", ProjectorLease)
	}
	return l, err
}

// switchGraceClock measures, by this process's clock, how long ago it first saw the switch a
// rebuild asks for: the projector stands aside for switchGrace from then, for the rebuild to
// take its lease, and goes on after it when no rebuild did (it died).
type switchGraceClock struct {
	asked time.Time // the rebuild's SwitchAsked of the switch seen
	seen  time.Time // when this process first saw it
}

// left returns how long the projector still stands aside for the switch g asks for, 0 when none.
func (c *switchGraceClock) left(g Record) time.Duration {
	if !g.switching() {
		return 0
	}
	if !g.Rebuild.SwitchAsked.Equal(c.asked) || c.seen.IsZero() {
		c.asked, c.seen = g.Rebuild.SwitchAsked, time.Now()
	}
	return max(switchGrace-time.Since(c.seen), 0)
}

// awaitNoSwitch returns once no rebuild is switching generations, or this process saw the switch
// asked for more than switchGrace ago: the rebuild then holds the projector's lease, or died.
func (s *Supervisor) awaitNoSwitch(ctx context.Context, grace *switchGraceClock) error {
	for {
		g, changed := s.cfg.Watch.State()
		wait := grace.left(g)
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// runLeased runs work while l is kept, and stops it when l is lost. The lease is kept, and then
// released, only once the work has stopped: no other process starts it meanwhile.
func runLeased(ctx context.Context, l *lease, work func(context.Context) error) error {
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	held := l.hold(ctx, func(error) { stopWork() }) // a lost lease stops the work at once
	err := work(wctx)
	if kerr := held.release(); kerr != nil {
		return kerr
	}
	return err
}
