package generation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// rebuildHolder starts the name under which a rebuild holds the projector's lease.
const rebuildHolder = "rebuild "

// rebuildLease is the lease a rebuild holds for its whole run: one rebuild at a time, and no
// abandoning of one that runs.
const rebuildLease = "rebuild"

// RebuildConfig is one run of a rebuild.
type RebuildConfig struct {
	// Conn is the connection to the NATS of the running service.
	Conn *nats.Conn
	// Holder names this process in the leases.
	Holder string
	// Workers and Cache are the rebuild projector's (0: as many as the projector);
	// VerifyWorkers the establishments verified at once.
	Workers, Cache, VerifyWorkers int
	// SpillDir holds the temporary files of a replay in several passes.
	SpillDir string
	// Handover bounds the wait for the projector to hand over, and for every read node to serve
	// the new generation; SwitchTimeout how long projection may stay paused for the switch.
	Handover, SwitchTimeout time.Duration
	// Out hears of each phase, a line each.
	Out io.Writer
	// Progress starts the display of a phase's progress, verb saying what is done to the
	// establishments; show reports it, end ends the display, ok saying whether the phase
	// completed.
	Progress func(verb string) (show func(done, total int), end func(ok bool))
	Logger   *slog.Logger
	// CheckFilesURL, optional, hears the base URL of uploaded files the rebuild renders under
	// (the current projector's, or the one the rebuild under way began with) before the rebuild
	// begins or resumes, and refuses it with an error.
	CheckFilesURL func(filesURL string) error
}

// rebuilder is one run of a rebuild.
type rebuilder struct {
	cfg      RebuildConfig
	js       jetstream.JetStream
	store    *events.Store
	gens     jetstream.KeyValue
	replicas int
}

func (r *rebuilder) say(format string, args ...any) {
	fmt.Fprintf(r.cfg.Out, "rebuild: "+format+"\n", args...)
}

// Rebuild renders the whole log into the next generation of the documents while the current one
// is served, verifies it, switches every process to it, announces what changed and removes the
// old generation. Run again after an interruption, it resumes.
func Rebuild(ctx context.Context, cfg RebuildConfig) (err error) {
	r := &rebuilder{cfg: cfg}
	if err := r.open(ctx); err != nil {
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
	rb, switched, err := r.begin(ctx)
	if err != nil {
		return err
	}
	if !switched {
		if err := r.buildAndSwitch(ctx, rb); err != nil {
			return err
		}
		// As the switch left it: the position settled before it moved on.
		g, _, err := Read(ctx, r.gens)
		if err != nil {
			return err
		}
		if g.Rebuild != nil && g.Rebuild.Next == rb.Next {
			rb = *g.Rebuild
		}
	}
	return r.finish(ctx, rb)
}

// open binds to the log and the generations record, creating the generations bucket at the
// replicas of the event log.
func (r *rebuilder) open(ctx context.Context) error {
	var err error
	if r.js, err = jetstream.New(r.cfg.Conn); err != nil {
		return err
	}
	if r.store, err = events.Bind(ctx, r.cfg.Conn); err != nil {
		return err
	}
	stream, err := r.js.Stream(ctx, events.StreamName)
	if err != nil {
		return err
	}
	r.replicas = max(stream.CachedInfo().Config.Replicas, 1)
	if r.gens, err = r.js.KeyValue(ctx, Bucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		r.gens, err = OpenBucket(ctx, r.js, r.replicas)
	}
	if err != nil {
		return fmt.Errorf("generations bucket: %w", err)
	}
	_, _, err = Read(ctx, r.gens)
	return err
}

// lock takes the rebuild lease and keeps it until unlock is called; ctx ends when it is lost.
func (r *rebuilder) lock(ctx context.Context) (_ context.Context, unlock func(), _ error) {
	leases, err := r.leases(ctx)
	if err != nil {
		return nil, nil, err
	}
	l, other, err := tryLease(ctx, leases, rebuildLease, rebuildHolder+r.cfg.Holder)
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		return nil, nil, fmt.Errorf("rebuild: another rebuild runs (%s): wait for it, or stop it first", other)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	held := l.hold(ctx, func(err error) { cancel(fmt.Errorf("rebuild: %w", err)) })
	return ctx, func() { _ = held.release(); cancel(nil) }, nil
}

// leases binds to the leases bucket, creating it when no process did yet.
func (r *rebuilder) leases(ctx context.Context) (jetstream.KeyValue, error) {
	leases, err := r.js.KeyValue(ctx, LeasesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return OpenLeases(ctx, r.js, r.replicas)
	}
	return leases, err
}

// begin starts a rebuild, or resumes the one under way; switched says its generation is served
// already.
func (r *rebuilder) begin(ctx context.Context) (_ Rebuilding, switched bool, _ error) {
	g, rev, err := Read(ctx, r.gens) // as it stands under the lock
	if err != nil {
		return Rebuilding{}, false, err
	}
	if g.Rebuild != nil {
		if err := r.checkFilesURL(g.Rebuild.FilesURL); err != nil {
			return Rebuilding{}, false, err
		}
		r.say("resuming the rebuild of generation %d, %s since %s", g.Rebuild.Next, g.Rebuild.Phase, g.Rebuild.Started.Format(time.RFC3339))
		return *g.Rebuild, g.Served() == g.Rebuild.Next, nil
	}
	cur := g.Served()
	_, state, err := r.generation(ctx, cur)
	if err != nil {
		return Rebuilding{}, false, err
	}
	cp, ok, err := runner.ReadCheckpoint(ctx, state)
	if err != nil {
		return Rebuilding{}, false, err
	}
	if !ok {
		return Rebuilding{}, false, errors.New("rebuild: the projector has written no checkpoint yet: start the service first, and wait for it to catch up")
	}
	if err := r.checkFilesURL(cp.FilesURL); err != nil {
		return Rebuilding{}, false, err
	}
	last, err := r.store.LastStreamSequence(ctx)
	if err != nil {
		return Rebuilding{}, false, err
	}
	// A generation number is never used twice: an abandoned rebuild's may still have writers.
	next := max(cur, g.Highest) + 1
	g.Highest = next
	g.Rebuild = &Rebuilding{From: cur, Next: next, Phase: phaseBuilding, Position: min(cp.Position, last), FilesURL: cp.FilesURL,
		Replayed: cp.Replayed, Started: time.Now().UTC()}
	if _, err := write(ctx, r.gens, g, rev); err != nil {
		return Rebuilding{}, false, fmt.Errorf("rebuild: start (did another rebuild start meanwhile?): %w", err)
	}
	r.say("building generation %d of the documents from the log (generation %d is served meanwhile)", g.Rebuild.Next, cur)
	return *g.Rebuild, false, nil
}

// checkFilesURL hands url, the base URL of uploaded files the rebuild renders under, to
// RebuildConfig.CheckFilesURL.
func (r *rebuilder) checkFilesURL(url string) error {
	if r.cfg.CheckFilesURL == nil {
		return nil
	}
	return r.cfg.CheckFilesURL(url)
}

// generation binds to the buckets of generation n.
func (r *rebuilder) generation(ctx context.Context, n int) (docs *runner.Bundles, state jetstream.KeyValue, err error) {
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
func (r *rebuilder) update(ctx context.Context, change func(*Record) error) (Record, error) {
	for {
		g, rev, err := Read(ctx, r.gens)
		if err != nil {
			return g, err
		}
		if err := change(&g); err != nil {
			return g, err
		}
		_, err = write(ctx, r.gens, g, rev)
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
			return g, err
		}
	}
}

// errAbandoned is why a phase stops when the record no longer names its rebuild.
var errAbandoned = errors.New("rebuild: the rebuild was abandoned meanwhile")

// Abandon removes the rebuild under way and the generation it built, before its switch, once no
// rebuild runs.
func Abandon(ctx context.Context, cfg RebuildConfig) error {
	r := &rebuilder{cfg: cfg}
	if err := r.open(ctx); err != nil {
		return err
	}
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	g, _, err := Read(ctx, r.gens)
	if err != nil {
		return err
	}
	if g.Rebuild == nil {
		return errors.New("rebuild: no rebuild is under way")
	}
	rb := *g.Rebuild
	if g.Served() == rb.Next || rb.Phase == phaseAnnouncing {
		return fmt.Errorf("rebuild: generation %d is served already; run rebuild to finish it", rb.Next)
	}
	changed := errors.New("rebuild: the rebuild changed meanwhile; look again")
	// The switch asked for is called off first: the projector goes on with the current
	// generation at once.
	if _, err := r.update(ctx, func(g *Record) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next || g.Served() == rb.Next {
			return changed
		}
		g.Rebuild.Phase, g.Rebuild.SwitchAsked = phaseBuilding, time.Time{}
		return nil
	}); err != nil {
		return err
	}
	docs, state := runner.GenerationBuckets(rb.Next)
	if err := r.remove(ctx, docs, state); err != nil {
		return err
	}
	if _, err := r.update(ctx, func(g *Record) error {
		if g.Rebuild == nil || g.Rebuild.Next != rb.Next || g.Served() == rb.Next {
			return changed
		}
		g.Rebuild = nil
		return nil
	}); err != nil {
		return err
	}
	r.say("abandoned the rebuild of generation %d; removed %s, %s", rb.Next, docs, state)
	return nil
}
