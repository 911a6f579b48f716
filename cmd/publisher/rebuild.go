package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/progress"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// rebuildHolder starts the name under which a rebuild holds the projector's lease.
const rebuildHolder = "rebuild "

// rebuildCommand renders the whole log into the next generation of the documents bucket while
// the current one is served, verifies it, switches every process to it, announces what changed
// and removes the old generation. Run again after an interruption, it resumes.
func rebuildCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn node.Client
	conn.Register(fs, "NATS of the running service")
	workers := fs.Int("workers", 0, "establishments rendered at once (0: as many as the projector)")
	cache := fs.Int("cache", 0, "establishments held in memory while rendering (0: as many as the projector)")
	spillDir := fs.String("spill-dir", "", "directory of the temporary files of a replay in several passes, up to the size of the event log (empty: the system's temporary directory, which may be held in memory: give a directory on disk for a large log)")
	verifyWorkers := fs.Int("verify-workers", runner.DefaultVerifyWorkers, "establishments verified at once")
	handover := fs.Duration("handover-timeout", time.Minute, "how long the switch waits for the projector to hand over, and the old generation's removal for every read node to serve the new one")
	switchTimeout := fs.Duration("switch-timeout", 2*time.Minute, "how long projection may stay paused for the switch before it is called off")
	abandon := fs.Bool("abandon", false, "abandon the rebuild under way, removing the generation it built, instead of resuming it")
	var prog progress.Options
	prog.Register(fs)
	logLevel := fs.String("log-level", "warn", "level of the log written to stderr: debug, info, warn or error")
	fs.Usage = envflag.Usage(fs, "publisher rebuild [flags]")
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := prog.Check(); err != nil {
		return err
	}
	switch {
	case *workers < 0 || *cache < 0 || *verifyWorkers <= 0:
		return errors.New("--workers and --cache: want 0 or more; --verify-workers: want 1 or more")
	case *handover <= 0 || *switchTimeout <= 0:
		return fmt.Errorf("--handover-timeout %s, --switch-timeout %s: want positive durations", *handover, *switchTimeout)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	nc, err := conn.Connect("publisher-rebuild", getenv)
	if err != nil {
		return err
	}
	defer nc.Close()
	r := &rebuilder{
		nc: nc, out: stderr, logger: logger, workers: *workers, cache: *cache, spillDir: *spillDir, verifyWorkers: *verifyWorkers,
		handover: *handover, switchTimeout: *switchTimeout, progress: prog,
	}
	if *abandon {
		return r.abandon(ctx)
	}
	return r.run(ctx)
}

// rebuilder is one run of the rebuild command.
type rebuilder struct {
	nc            *nats.Conn
	js            jetstream.JetStream
	store         *events.Store
	gens          jetstream.KeyValue
	out           io.Writer
	logger        *slog.Logger
	workers       int
	cache         int
	spillDir      string
	verifyWorkers int
	handover      time.Duration
	switchTimeout time.Duration
	progress      progress.Options
	replicas      int
}

func (r *rebuilder) say(format string, args ...any) {
	fmt.Fprintf(r.out, "rebuild: "+format+"\n", args...)
}

// open binds to the log and the generations record, creating the generations bucket at the
// replicas of the documents bucket served, and returns the record and its revision.
func (r *rebuilder) open(ctx context.Context) (generations, uint64, error) {
	var err error
	if r.js, err = jetstream.New(r.nc); err != nil {
		return generations{}, 0, err
	}
	if r.store, err = events.Bind(ctx, r.nc); err != nil {
		return generations{}, 0, err
	}
	stream, err := r.js.Stream(ctx, events.StreamName)
	if err != nil {
		return generations{}, 0, err
	}
	r.replicas = max(stream.CachedInfo().Config.Replicas, 1)
	if r.gens, err = r.js.KeyValue(ctx, GenerationsBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		r.gens, err = openGenerationsBucket(ctx, r.js, r.replicas)
	}
	if err != nil {
		return generations{}, 0, fmt.Errorf("generations bucket: %w", err)
	}
	return readGenerations(ctx, r.gens)
}

// generation binds to the buckets of generation n.
func (r *rebuilder) generation(ctx context.Context, n int) (docs, state jetstream.KeyValue, err error) {
	docsName, stateName := runner.GenerationBuckets(n)
	kv, err := r.js.KeyValue(ctx, docsName)
	if err != nil {
		return nil, nil, fmt.Errorf("documents bucket %s: %w", docsName, err)
	}
	docs = runner.NewBundles(r.js, kv)
	if state, err = r.js.KeyValue(ctx, stateName); err != nil {
		return nil, nil, fmt.Errorf("projector bucket %s: %w", stateName, err)
	}
	return docs, state, nil
}

// update applies change to the generations record, read again until no other process changed it
// in between.
func (r *rebuilder) update(ctx context.Context, change func(*generations) error) (generations, error) {
	for {
		g, rev, err := readGenerations(ctx, r.gens)
		if err != nil {
			return g, err
		}
		if err := change(&g); err != nil {
			return g, err
		}
		_, err = writeGenerations(ctx, r.gens, g, rev)
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) && !node.HasCode(err, jetstream.JSErrCodeStreamWrongLastSequence) {
			return g, err
		}
	}
}

// rebuildLease is the lease a rebuild holds for its whole run: one rebuild at a time, and no
// abandoning of one that runs.
const rebuildLease = "rebuild"

// lock takes the rebuild lease and keeps it until release is called; ctx ends when it is lost.
func (r *rebuilder) lock(ctx context.Context) (context.Context, func(), error) {
	leases, err := r.js.KeyValue(ctx, LeasesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		leases, err = openLeases(ctx, r.js, r.replicas)
	}
	if err != nil {
		return nil, nil, err
	}
	l, other, err := tryLease(ctx, leases, rebuildLease, rebuildHolder+processName())
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		return nil, nil, fmt.Errorf("rebuild: another rebuild runs (%s): wait for it, or stop it first", other)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	kctx, stopKeeping := context.WithCancel(context.WithoutCancel(ctx))
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		if err := l.keep(kctx); err != nil {
			cancel(fmt.Errorf("rebuild: %w", err))
		}
	}()
	return ctx, func() { stopKeeping(); <-kept; cancel(nil) }, nil
}

func (r *rebuilder) run(ctx context.Context) (err error) {
	g, rev, err := r.open(ctx)
	if err != nil {
		return err
	}
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() {
		// A step cut short by the loss of the lease says "context canceled": name the loss.
		if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
	}()
	if g, rev, err = readGenerations(ctx, r.gens); err != nil { // as it stands under the lock
		return err
	}
	if g.Rebuild == nil {
		cur := g.current()
		_, state, err := r.generation(ctx, cur)
		if err != nil {
			return err
		}
		cp, ok, err := runner.ReadCheckpoint(ctx, state)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("rebuild: the projector has written no checkpoint yet: start the service first, and wait for it to catch up")
		}
		last, err := r.store.LastStreamSequence(ctx)
		if err != nil {
			return err
		}
		// A generation number is never used twice: an abandoned rebuild's may still have writers.
		next := max(cur, g.Highest) + 1
		g.Highest = next
		g.Rebuild = &rebuildState{From: cur, Next: next, Phase: phaseBuilding, Position: min(cp.Position, last), FilesURL: cp.FilesURL,
			Replayed: cp.Replayed, Started: time.Now().UTC()}
		if _, err := writeGenerations(ctx, r.gens, g, rev); err != nil {
			return fmt.Errorf("rebuild: start (did another rebuild start meanwhile?): %w", err)
		}
		r.say("building generation %d of the documents from the log (generation %d is served meanwhile)", g.Rebuild.Next, cur)
	} else {
		r.say("resuming the rebuild of generation %d, %s since %s", g.Rebuild.Next, g.Rebuild.Phase, g.Rebuild.Started.Format(time.RFC3339))
	}
	rb := *g.Rebuild
	if g.current() != rb.Next {
		if err := r.buildAndSwitch(ctx, rb); err != nil {
			return err
		}
		// As the switch left it: the position settled before it moved on.
		if g, _, err = readGenerations(ctx, r.gens); err != nil {
			return err
		}
		if g.Rebuild != nil && g.Rebuild.Next == rb.Next {
			rb = *g.Rebuild
		}
	}
	return r.announce(ctx, rb)
}

// buildAndSwitch renders the log into generation rb.Next, verifies it and switches to it.
func (r *rebuilder) buildAndSwitch(ctx context.Context, rb rebuildState) error {
	oldDocs, _, err := r.generation(ctx, rb.From)
	if err != nil {
		return err
	}
	newDocs, newState, err := runner.OpenGeneration(ctx, r.js, rb.Next, r.replicas)
	if err != nil {
		return err
	}
	if rb.Phase == phaseSwitching {
		// An earlier run stopped while switching: the projector goes on until this one is ready.
		if _, err := r.update(ctx, func(g *generations) error {
			if g.Rebuild != nil {
				g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
			}
			return nil
		}); err != nil {
			return err
		}
	}

	start := time.Now()
	var rendered atomic.Int64
	show, stopShow := progress.Establishments(r.out, r.progress, start, "rendered")
	run := func() (*runningProjector, error) {
		return r.startProjector(ctx, rb, oldDocs, newDocs, newState, func(done, all int) {
			rendered.Store(int64(done))
			show(done, all)
		})
	}
	pr, err := run()
	if err != nil {
		stopShow(false)
		return err
	}
	defer func() { pr.stop() }()
	// caughtUp waits until the new generation holds every record of the log as it is now.
	caughtUp := func() error {
		last, err := r.store.LastStreamSequence(ctx)
		if err != nil {
			return err
		}
		if err := pr.p.WaitFor(ctx, last); err != nil {
			if errors.Is(err, runner.ErrStopped) {
				return fmt.Errorf("rebuild: %w", pr.stop())
			}
			return err
		}
		return nil
	}
	err = caughtUp()
	stopShow(err == nil)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if n := rendered.Load(); n > 0 {
		r.say("rendered %d establishments in %s (%.0f/s)", n, took.Round(time.Millisecond), float64(n)/max(took.Seconds(), 1e-9))
	} else {
		r.say("generation %d was rendered by an earlier run; it follows the log", rb.Next)
	}

	// Verified while it follows the log, against the records it has projected.
	start = time.Now()
	show, stopShow = progress.Establishments(r.out, r.progress, start, "verified")
	rep, err := runner.Verify(ctx, runner.VerifyConfig{
		Log: r.store, KV: newDocs, Workers: r.verifyWorkers, FilesURL: rb.FilesURL, Progress: show, Logger: r.logger,
		UpTo: pr.p.Position(),
	})
	stopShow(err == nil)
	if err != nil {
		return err
	}
	if rep.Different > 0 {
		for _, d := range rep.Differences {
			r.say("differs: %s: %s", d.Slug, d.Reason)
		}
		return fmt.Errorf("rebuild: generation %d differs from the log in %d establishments: nothing was switched (run rebuild again to resume, or rebuild --abandon)", rb.Next, rep.Different)
	}
	r.say("verified generation %d: %d establishments equal to the log's rendering, in %s", rb.Next, rep.Checked, time.Since(start).Round(time.Millisecond))

	// What the old generation's projector stored while the rebuild ran is settled now, while it
	// goes on projecting: the switch then settles only what it stores from here on.
	_, oldState, err := r.generation(ctx, rb.From)
	if err != nil {
		return err
	}
	cp, ok, err := runner.ReadCheckpoint(ctx, oldState)
	if err != nil {
		return err
	}
	if ok && cp.Position > rb.Position {
		start = time.Now()
		// Every record up to the old checkpoint taken in, so that the next round starts there.
		if err := pr.p.WaitFor(ctx, cp.Position); err != nil {
			return err
		}
		if err := pr.stop(); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("rebuild: %w", err)
		}
		raised, err := pr.p.Settle(ctx, rb.Position+1, pr.p.Position())
		if err != nil {
			return err
		}
		if _, err := r.update(ctx, func(g *generations) error {
			if g.Rebuild == nil || g.Rebuild.Next != rb.Next {
				return errors.New("rebuild: the rebuild was abandoned meanwhile")
			}
			g.Rebuild.Position = cp.Position
			return nil
		}); err != nil {
			return err
		}
		rb.Position = cp.Position
		if pr, err = run(); err != nil {
			return err
		}
		if err := caughtUp(); err != nil {
			return err
		}
		r.say("settled the changes made while the rebuild ran, up to position %d: %d establishments raised above the old generation, in %s",
			rb.Position, raised, time.Since(start).Round(time.Millisecond))
	}
	return r.switchTo(ctx, rb, pr, newDocs)
}

// runningProjector is the rebuild's projector, running until stop.
type runningProjector struct {
	p    *runner.Projector
	stop func() error // stops it and returns what its Run returned; again, the same
}

// startProjector runs a projector of generation rb.Next, built against oldDocs.
func (r *rebuilder) startProjector(ctx context.Context, rb rebuildState, oldDocs, newDocs, newState jetstream.KeyValue, progress func(done, total int)) (*runningProjector, error) {
	p, err := runner.New(runner.Config{
		Store: r.store, KV: newDocs, State: newState, Replaces: oldDocs,
		Workers: r.workers, CacheSize: r.cache, SpillDir: r.spillDir, FilesURL: rb.FilesURL, MaxValueSize: int(min(r.nc.MaxPayload(), runner.MaxBundleSize)),
		Logger: r.logger.With("role", "rebuild"), Progress: progress,
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

// switchTo stops the projector of the current generation, brings p's generation level with the
// log and above the current one, and makes it current.
func (r *rebuilder) switchTo(ctx context.Context, rb rebuildState, pr *runningProjector, newDocs jetstream.KeyValue) error {
	p := pr.p
	asked := time.Now().UTC()
	if _, err := r.update(ctx, func(g *generations) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next {
			return errors.New("rebuild: the rebuild was abandoned meanwhile")
		}
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseSwitching, asked
		return nil
	}); err != nil {
		return err
	}
	var back func(error) error // backOff, and once projection is paused, with the switch's deadline
	backOff := func(cause error) error {
		// The projector of the current generation goes on; the next run resumes.
		if _, err := r.update(context.WithoutCancel(ctx), func(g *generations) error {
			if g.Rebuild != nil && g.Rebuild.Next == rb.Next && g.Rebuild.Phase == phaseSwitching && g.Rebuild.SwitchAsked.Equal(asked) {
				g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
			}
			return nil
		}); err != nil {
			r.logger.Error("rebuild: the switch could not be called off", "err", err)
		}
		return cause
	}
	back = backOff
	leases, err := r.js.KeyValue(ctx, LeasesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		leases, err = openLeases(ctx, r.js, r.replicas)
	}
	if err != nil {
		return back(err)
	}
	hctx, cancel := context.WithTimeout(ctx, r.handover)
	l, err := waitLease(hctx, leases, roleProjector, rebuildHolder+processName(), 200*time.Millisecond, nil)
	cancel()
	if err != nil {
		return back(fmt.Errorf("rebuild: the projector did not hand over within %s (--handover-timeout): %w", r.handover, err))
	}
	paused := time.Now()
	// Projection is paused from here: the switch has a deadline, past which it is called off.
	ctx, cancelSwitch := context.WithTimeoutCause(ctx, r.switchTimeout,
		fmt.Errorf("rebuild: the switch did not complete within %s (--switch-timeout); projection goes on with generation %d, run rebuild again", r.switchTimeout, rb.From))
	defer cancelSwitch()
	kctx, stopKeeping := context.WithCancel(context.WithoutCancel(ctx))
	lost := make(chan error, 1)
	go func() { lost <- l.keep(kctx) }()
	release := func() {
		stopKeeping()
		<-lost
	}
	back = func(cause error) error {
		if context.Cause(ctx) != nil && ctx.Err() != nil {
			cause = context.Cause(ctx)
		}
		return backOff(cause)
	}
	// The bundles of the old generation changed only through the records after rb.Position,
	// unless its projector replayed the whole log meanwhile, or renders under another files URL.
	_, oldState, err := r.generation(ctx, rb.From)
	if err != nil {
		release()
		return back(err)
	}
	if cp, ok, err := runner.ReadCheckpoint(ctx, oldState); err != nil {
		release()
		return back(err)
	} else if !ok || cp.FilesURL != rb.FilesURL || !cp.Replayed.Equal(rb.Replayed) {
		release()
		return back(fmt.Errorf("rebuild: the projector of generation %d replayed the whole log, or renders under another files URL, since the rebuild began: run rebuild --abandon, then rebuild again", rb.From))
	}
	// Every record the old generation's projector stored is in the log now: the new generation
	// takes them all in, then stops at a known position.
	last, err := r.store.LastStreamSequence(ctx)
	if err == nil {
		err = p.WaitFor(ctx, last)
	}
	if perr := pr.stop(); err == nil && !errors.Is(perr, context.Canceled) {
		err = perr
	}
	if err != nil {
		release()
		return back(err)
	}
	raised, err := p.Settle(ctx, rb.Position+1, p.Position())
	if err != nil {
		release()
		return back(err)
	}
	st, err := newDocs.Status(ctx)
	if err != nil {
		release()
		return back(err)
	}
	var revision uint64
	if s, ok := st.(interface{ StreamInfo() *jetstream.StreamInfo }); ok && s.StreamInfo() != nil {
		revision = s.StreamInfo().State.LastSeq
	}
	select {
	case err := <-lost:
		lost <- err
		release()
		return back(fmt.Errorf("rebuild: the projector's lease was lost during the switch: %w", err))
	default:
	}
	_, err = r.update(ctx, func(g *generations) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next {
			return errors.New("rebuild: the rebuild was abandoned meanwhile")
		}
		g.Current, g.SwitchRevision, g.Switched = rb.Next, revision, time.Now().UTC()
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseAnnouncing, time.Time{}
		return nil
	})
	release()
	if err != nil {
		return back(err)
	}
	r.say("switched to generation %d at position %d: projection paused %s, %d establishments raised above the old generation",
		rb.Next, p.Position(), time.Since(paused).Round(time.Millisecond), raised)
	return nil
}

// announce tells the webhooks of every establishment whose documents the switch changed, then
// removes the old generation and the rebuild record.
func (r *rebuilder) announce(ctx context.Context, rb rebuildState) error {
	newDocs, _, err := r.generation(ctx, rb.Next)
	if err != nil {
		return err
	}
	oldDocsName, oldStateName := runner.GenerationBuckets(rb.From)
	oldDocs, err := r.js.KeyValue(ctx, oldDocsName)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		// Announced and removed by an earlier run; its state bucket may remain.
		if err := r.js.DeleteKeyValue(ctx, oldStateName); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("rebuild: remove %s: %w", oldStateName, err)
		}
	case err != nil:
		return err
	default:
		signals, err := events.OpenSignals(ctx, r.nc, r.replicas)
		if err != nil {
			return err
		}
		start := time.Now()
		show, stopShow := progress.Establishments(r.out, r.progress, start, "compared")
		n, err := runner.AnnounceSwitch(ctx, runner.AnnounceConfig{
			Old: oldDocs, New: newDocs, Notifier: signalNotifier{s: signals}, Since: rb.Position, Progress: show, Logger: r.logger,
		})
		stopShow(err == nil)
		if err != nil {
			return fmt.Errorf("rebuild: %w (run rebuild again to resume)", err)
		}
		r.say("announced %d establishments whose documents changed, in %s", n, time.Since(start).Round(time.Millisecond))
		if err := r.awaitReadNodes(ctx, newDocs.Bucket()); err != nil {
			return err
		}
		for _, name := range []string{oldStateName, oldDocsName} { // the documents last: see above
			if err := r.js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
				return fmt.Errorf("rebuild: remove %s: %w", name, err)
			}
		}
		r.say("removed generation %d (%s, %s)", rb.From, oldDocsName, oldStateName)
	}
	if _, err := r.update(ctx, func(g *generations) error {
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

// abandon removes the rebuild under way and the generation it built, before its switch, once no
// rebuild runs.
func (r *rebuilder) abandon(ctx context.Context) error {
	if _, _, err := r.open(ctx); err != nil {
		return err
	}
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	g, _, err := readGenerations(ctx, r.gens)
	if err != nil {
		return err
	}
	if g.Rebuild == nil {
		return errors.New("rebuild: no rebuild is under way")
	}
	rb := *g.Rebuild
	if g.current() == rb.Next || rb.Phase == phaseAnnouncing {
		return fmt.Errorf("rebuild: generation %d is served already; run rebuild to finish it", rb.Next)
	}
	// The switch asked for is called off first: the projector goes on with the current
	// generation at once.
	if _, err := r.update(ctx, func(g *generations) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next || g.current() == rb.Next {
			return errors.New("rebuild: the rebuild changed meanwhile; look again")
		}
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
		return nil
	}); err != nil {
		return err
	}
	docs, state := runner.GenerationBuckets(rb.Next)
	for _, name := range []string{docs, state} {
		if err := r.js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("rebuild: remove %s: %w", name, err)
		}
	}
	if _, err := r.update(ctx, func(g *generations) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next || g.current() == rb.Next {
			return errors.New("rebuild: the rebuild changed meanwhile; look again")
		}
		g.Rebuild = nil
		return nil
	}); err != nil {
		return err
	}
	r.say("abandoned the rebuild of generation %d; removed %s", rb.Next, strings.Join([]string{docs, state}, ", "))
	return nil
}

// servedSubject is where read nodes answer which generation of the documents they serve.
const servedSubject = "publisher.documents.served"

// awaitReadNodes returns once every read node that answers serves the bucket want, or fails after
// --handover-timeout: the old generation is removed only once no read node serves it.
func (r *rebuilder) awaitReadNodes(ctx context.Context, want string) error {
	deadline := time.Now().Add(r.handover)
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
			return fmt.Errorf("rebuild: %d of %d read nodes still serve another generation after %s: the old one is kept (run rebuild again to remove it)", behind, len(served), r.handover)
		}
		if err := events.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// askServed asks every read node which bucket it serves and gathers the answers that come within
// a short while.
func (r *rebuilder) askServed(ctx context.Context) ([]string, error) {
	inbox := r.nc.NewRespInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := r.nc.PublishRequest(servedSubject, inbox, nil); err != nil {
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
