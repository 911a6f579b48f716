package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/events"
)

// ErrStopped is returned by WaitFor when Run has returned before the awaited sequence was
// projected.
var ErrStopped = errors.New("projections: projector stopped")

// Config is what a Projector needs.
type Config struct {
	// Store is the event log, normally an *events.Store.
	Store Log
	// KV is the bucket of bundles, as OpenBucket or OpenGeneration open it, or a bucket opened
	// otherwise made a *Bundles by NewBundles.
	KV *Bundles
	// State is where the projector keeps its checkpoint and the state of the establishments it
	// does not hold in memory, normally the jetstream.KeyValue returned by OpenStateBucket.
	State StateStore
	// CacheSize bounds how many establishments the projector holds in memory, all workers
	// together; zero means DefaultCacheSize. The others are loaded from State and the log when
	// a record of theirs arrives.
	CacheSize int
	// CheckpointEvery is how often, at most, the projector saves the position it reached, from
	// which it resumes at its next start; zero means DefaultCheckpointEvery.
	CheckpointEvery time.Duration
	// ReplayAll makes Run replay the whole log even when it could resume from its checkpoint,
	// and store every bundle that differs from the replay: after the bucket of bundles was
	// changed by other means, say.
	ReplayAll bool
	// Logger receives skipped events and retried writes; nil discards them.
	Logger *slog.Logger
	// Now is the clock against which the age of a change is measured for ReannounceWithin; nil
	// is time.Now.
	Now func() time.Time
	// SignalRetention is how long Announcements remembers an announcement (the change signals'
	// retention); zero means events.SignalMaxAge. A start checks the announcements of changes a
	// day younger than that (half as old under two days).
	SignalRetention time.Duration
	// Notifier, optional, is called after each stored rise of a revision, by several workers
	// at once: it must be safe for concurrent use, as KV must.
	Notifier Notifier
	// Announcements, optional, tells what Notifier announced: with it, a start announces again
	// a stored revision whose announcement was lost. Safe for concurrent use.
	Announcements Announcements
	// AllAnnouncements, optional, used with Announcements, tells in one read what Notifier
	// announced of every establishment, which a replay of the whole log then asks nothing one by
	// one.
	AllAnnouncements AllAnnouncements
	// MaxValueSize is the largest encoded bundle stored, in bytes; zero means MaxBundleSize. Set
	// it to the connection's maximum payload when that is lower, so that an oversized bundle is
	// refused at once instead of retried.
	MaxValueSize int
	// Workers is how many establishments are projected at once, rendered, compressed and stored
	// in parallel; zero means WorkersPerCPU per CPU (GOMAXPROCS). The records of one establishment are always projected
	// by the same worker, in the order of the log, so the bundles and revisions stored are those
	// of a projection one record at a time.
	Workers int
	// FilesURL is the public base URL of the read API, which serves uploaded files: the
	// documents give a file the log names by its digest the URL FilesURL/files/<name>. A
	// checkpoint written under another FilesURL is not resumed from: the whole log is replayed,
	// and every bundle whose URLs moved is stored again.
	FilesURL string
	// Replaces, optional, is the bucket of bundles that KV is built to replace: the generation
	// served while a rebuild renders the next one into KV. When the replay of the whole log
	// stores an establishment KV holds nothing of, it decides the revision against the bundle
	// Replaces holds, as if that one were stored in KV: the same documents keep their revision,
	// different ones get a higher one. Settle finishes the job once the replaced generation no
	// longer changes.
	Replaces *Bundles
	// SpillDir is where a replay of the whole log in several passes (more establishments than
	// CacheSize) keeps the records of its later passes, in temporary files, so as to read the
	// log once: up to the log's size on disk while it runs, never past the file system's
	// reserve. Where they cannot be kept, each pass reads the log. Empty means os.TempDir().
	SpillDir string
	// Progress, optional, is called during a replay of the whole log after each establishment
	// reconciled with the stored bundles, with the number reconciled so far and the number of
	// establishments of the log, from several goroutines at once.
	Progress func(done, total int)
}

// Validate reports a missing dependency.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("projections: config: store is required"))
	}
	if c.KV == nil {
		errs = append(errs, errors.New("projections: config: kv bucket is required"))
	}
	if c.State == nil {
		errs = append(errs, errors.New("projections: config: state bucket is required"))
	}
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("projections: config: cache size %d is negative", c.CacheSize))
	}
	if c.CheckpointEvery < 0 {
		errs = append(errs, fmt.Errorf("projections: config: checkpoint interval %s is negative", c.CheckpointEvery))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("projections: config: workers %d is negative", c.Workers))
	}
	if c.MaxValueSize < 0 || c.MaxValueSize > MaxBundleSize {
		errs = append(errs, fmt.Errorf("projections: config: max value size %d is outside 0 to %d", c.MaxValueSize, MaxBundleSize))
	}
	return errors.Join(errs...)
}

// WorkersPerCPU is how many workers the projector runs per CPU unless told otherwise. A worker
// spends most of a live record waiting: for the bucket to acknowledge the bundle, then for the
// change to be announced. With one worker per CPU the projector fell far behind an import while
// the CPUs were not all busy; with 32 it kept within two seconds of it, the import slowing to
// what the CPUs left over allowed. Each costs a goroutine and the bundle it has in hand.
const WorkersPerCPU = 32

// DefaultCacheSize is how many establishments the projector holds in memory unless told
// otherwise.
const DefaultCacheSize = 10_000

// DefaultCheckpointEvery is how often the projector saves its position unless told otherwise.
const DefaultCheckpointEvery = 5 * time.Second

// Retry delays of a bundle write that failed, for instance while NATS is unreachable.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 5 * time.Second
)

// retry calls fn until it succeeds or ctx ends, waiting longer between failures: the bucket or
// the log may be briefly unreachable, and the projector resumes when they are back.
func (p *Projector) retry(ctx context.Context, what string, fn func() error) error {
	for wait := retryFirstWait; ; wait = min(2*wait, retryMaxWait) {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.logger.Warn(what+" failed, retrying", "retry_in", wait, "err", err)
		if err := events.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Projector keeps the bucket of bundles equal to the rendering of the event log. Run does the
// work; Position and WaitFor may be called from any goroutine.
type Projector struct {
	cfg    Config
	logger *slog.Logger

	started atomic.Bool
	stopped chan struct{} // closed when Run returns

	// The identities of the bucket of bundles and of the log, which checkpoints and states name,
	// and when the last replay of the whole log finished, which checkpoints carry; set by Run.
	bucket, log string
	replayed    time.Time

	mu       sync.Mutex
	position uint64        // guarded by mu
	advanced chan struct{} // closed and replaced when position moves; guarded by mu
}

// New returns a projector for cfg. It does nothing until Run is called.
func New(cfg Config) (*Projector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = MaxBundleSize
	}
	if cfg.Workers == 0 {
		cfg.Workers = WorkersPerCPU * runtime.GOMAXPROCS(0)
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	cfg.CacheSize = max(cfg.CacheSize, cfg.Workers) // one establishment per worker at least
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = DefaultCheckpointEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Projector{
		cfg:      cfg,
		logger:   logger,
		stopped:  make(chan struct{}),
		advanced: make(chan struct{}),
	}, nil
}

// Bucket returns the name of the bucket of bundles the projector writes to (Config.KV): which
// generation it projects into, dockey.GenerationOf says.
func (p *Projector) Bucket() string { return p.cfg.KV.Bucket() }

// Position returns the sequence of the last record of the log whose effect is stored.
func (p *Projector) Position() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.position
}

// WaitFor returns once the record with sequence seq, and every one before it, is projected and
// stored. It returns ctx's error when ctx ends first, and ErrStopped when Run has returned.
func (p *Projector) WaitFor(ctx context.Context, seq uint64) error {
	for {
		p.mu.Lock()
		pos, advanced := p.position, p.advanced
		p.mu.Unlock()
		if pos >= seq {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return fmt.Errorf("wait for sequence %d (projected %d): %w", seq, pos, ctx.Err())
		case <-p.stopped:
			if p.Position() >= seq {
				return nil
			}
			return fmt.Errorf("wait for sequence %d: %w", seq, ErrStopped)
		}
	}
}

func (p *Projector) advance(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq <= p.position {
		return
	}
	p.position = seq
	close(p.advanced)
	p.advanced = make(chan struct{})
}

// Run projects the log until ctx is done or the log cannot be read; a projector runs once.
//
// When the state bucket holds a checkpoint of this code, it follows the log from there. Otherwise
// it replays the whole log, storing nothing meanwhile, then stores a bundle only where the
// replayed one differs from the stored one, writes a checkpoint, and follows. Either way it holds
// at most Config.CacheSize establishments in memory (and, while replaying, the list of their
// slugs). Revisions follow the rule of next: a stored revision never goes back, whatever the
// bucket held before.
func (p *Projector) Run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("projections: run: projector already started")
	}
	defer close(p.stopped)
	err := p.run(ctx)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		return errors.New("projections: follow: the event log stopped delivering records")
	}
	return fmt.Errorf("projections: %w", err)
}

func (p *Projector) run(ctx context.Context) error {
	start := time.Now()
	var err error
	if p.bucket, err = p.cfg.KV.identity(ctx); err != nil {
		return err
	}
	if p.log, err = p.cfg.Store.Identity(ctx); err != nil {
		return err
	}
	var (
		last    uint64
		resumed bool
	)
	if !p.cfg.ReplayAll {
		if last, resumed, err = p.resumeFrom(ctx); err != nil {
			return err
		}
	}
	// Records up to the end of the log as it is at a resumption may have been projected before
	// the last stop, after the checkpoint: their announcements are checked again.
	var recheckTo uint64
	if resumed {
		p.logger.Info("projections resume from their checkpoint", "position", last)
		if recheckTo, err = p.cfg.Store.LastStreamSequence(ctx); err != nil {
			return err
		}
	} else {
		if last, err = p.replayAll(ctx); err != nil {
			return err
		}
		p.logger.Info("projections caught up", "position", last, "took", time.Since(start).Round(time.Millisecond))
	}
	p.advance(last)
	if err := p.follow(ctx, p.newLanes(), last, recheckTo); err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	return nil
}

// resumeFrom returns the position of the stored checkpoint, with false when the whole log must
// be replayed: there is no checkpoint of this code and this bucket of bundles, or the log no
// longer reaches the position it vouches for.
func (p *Projector) resumeFrom(ctx context.Context) (uint64, bool, error) {
	cp, ok, err := readCheckpoint(ctx, p.cfg.State)
	if err != nil || !ok {
		return 0, false, err
	}
	if cp.Files != p.cfg.FilesURL {
		p.logger.Warn("the checkpoint gives uploaded files another URL: replaying the whole log",
			"checkpoint_files_url", cp.Files, "files_url", p.cfg.FilesURL)
		return 0, false, nil
	}
	if cp.Bucket != p.bucket || cp.Log != p.log {
		p.logger.Warn("the checkpoint is of another bucket of bundles or another log: replaying the whole log",
			"checkpoint_bucket", cp.Bucket, "bucket", p.bucket, "checkpoint_log", cp.Log, "log", p.log)
		return 0, false, nil
	}
	last, err := p.cfg.Store.LastStreamSequence(ctx)
	if err != nil {
		return 0, false, err
	}
	if cp.Position > last {
		p.logger.Warn("the checkpoint is past the end of the log: replaying the whole log",
			"checkpoint", cp.Position, "log_sequence", last)
		return 0, false, nil
	}
	p.replayed = cp.Replayed
	return cp.Position, true, nil
}
