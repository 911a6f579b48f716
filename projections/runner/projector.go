package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// ErrStopped is returned by WaitFor when Run has returned before the awaited sequence was
// projected.
var ErrStopped = errors.New("projections: projector stopped")

// Log is the event log the projector reads; *events.Store satisfies it.
type Log interface {
	// ReplayPart calls fn for every record from sequence from through to whose establishment
	// keep accepts, and unreadable for every such message that is not a readable record; other,
	// unless nil, receives every other message as stored, for events.DecodeRecord.
	ReplayPart(ctx context.Context, from, to uint64, keep func(slug string) bool, fn func(events.Record) error, other func(slug string, seq uint64, data []byte) error, unreadable func(seq uint64, err error)) error
	// Follow calls fn for every record from sequence from, stored or to come, until ctx is done.
	Follow(ctx context.Context, from uint64, fn func(events.Record) error) error
	// Before returns the records of one establishment from sequence from up to, not including,
	// its record at sequence before, oldest first, and passes to unreadable every message of
	// its that is not a readable record.
	Before(ctx context.Context, slug string, from, before uint64, unreadable func(seq uint64, err error)) ([]events.Record, error)
	// Range returns the records of one establishment from sequence from through to, which must
	// be the sequence of one of its records, oldest first.
	Range(ctx context.Context, slug string, from, to uint64) ([]events.Record, error)
	// Slugs lists, sorted, the establishments with at least one record.
	Slugs(ctx context.Context) ([]string, error)
	// LastStreamSequence returns the sequence of the log's last record.
	LastStreamSequence(ctx context.Context) (uint64, error)
	// Identity tells this log apart from any other, one restored from a backup say.
	Identity(ctx context.Context) (string, error)
}

// Notifier is told about every rise of an establishment's content_revision, after the bundle
// is stored. A failed Changed is retried until it succeeds or the projector stops, so Changed
// must tolerate being called again with the same change.
type Notifier interface {
	Changed(ctx context.Context, c Change) error
}

// AnnouncedNotifier is a Notifier that can tell the last revision it announced for an
// establishment (0 for none it still knows of). With it, the projector announces at start a
// stored revision whose announcement was lost, in a crash between storing its bundle and
// telling the notifier: the receivers of changes never miss the latest revision.
type AnnouncedNotifier interface {
	Notifier
	Announced(ctx context.Context, slug string) (int64, error)
}

// AllAnnouncedNotifier is an AnnouncedNotifier that also tells, in one read, the last revision it
// announced of every establishment it still knows of (those it does not are at 0): a replay of
// the whole log checks the announcements of them all, which one question each would make last.
type AllAnnouncedNotifier interface {
	AnnouncedNotifier
	AllAnnounced(ctx context.Context, fn func(slug string, revision int64)) error
}

// ReannounceWithin bounds how old a change may be for the projector to check at start that it
// was announced: a notifier forgets older announcements (the change signals stream keeps them
// for events.SignalMaxAge), and an establishment unchanged for that long must not be announced
// again at every start.
const ReannounceWithin = events.SignalMaxAge - 24*time.Hour

// Change is a rise of one establishment's content_revision.
type Change struct {
	Slug     string
	Revision int64
	// Resources lists the resources whose bytes changed: "establishment", "hours", "menus", then
	// "menus/<menu_type_slug>" by slug for each menu detail that changed, appeared or disappeared.
	Resources []string
}

// Config is what a Projector needs.
type Config struct {
	// Store is the event log, normally an *events.Store.
	Store Log
	// KV is the bucket of bundles, normally the jetstream.KeyValue returned by OpenBucket.
	KV Bucket
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
	// Notifier, optional, is called after each stored rise of a revision, by several workers
	// at once: it must be safe for concurrent use, as KV must.
	Notifier Notifier
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
	Replaces Bucket
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

// Documents returns the bucket of bundles the projector writes to (Config.KV).
func (p *Projector) Documents() Bucket { return p.cfg.KV }

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
	if p.bucket, err = bucketIdentity(ctx, p.cfg.KV); err != nil {
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

// replayAll replays the whole log without storing, then stores what differs from the bucket and
// writes a checkpoint. It returns the position reached.
//
// The establishments are replayed in as many passes as it takes for each pass's share to fit the
// cache: each pass decodes only its share's records, then reconciles its share, so that an
// establishment is rarely let go of and loaded again in the middle of the replay (only when a
// worker's share of a pass outgrows its part of the cache). The log is read once, by the first
// pass, which writes the records of the others to temporary files (Config.SpillDir) that they
// read instead, or, where the files cannot be kept, by every pass. Before the passes, the
// fingerprints of what the bucket holds are read from the bundles' headers, or from the bundles
// where a bundle has none: an establishment whose stored bundle is the one replayed costs no read
// of its own. Memory also holds the list of the log's establishments
// meanwhile: a slug and a fingerprint each.
func (p *Projector) replayAll(ctx context.Context) (uint64, error) {
	// The position first: every establishment with a record up to it is among the slugs.
	start := time.Now()
	last, err := p.cfg.Store.LastStreamSequence(ctx)
	if err != nil {
		return 0, err
	}
	slugs, err := p.cfg.Store.Slugs(ctx)
	if err != nil {
		return 0, err
	}
	listed := time.Since(start)
	// A replay interrupted is started again at the next start, not resumed from an older
	// checkpoint.
	if err := p.retry(ctx, "remove the checkpoint", func() error {
		err := p.cfg.State.Delete(ctx, checkpointKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	}); err != nil {
		return 0, err
	}
	var (
		tally  reconciled
		prints []uint64
	)
	if err := p.retry(ctx, "read the stored bundles", func() (err error) {
		tally = reconciled{total: len(slugs)}
		prints, err = p.storedPrints(ctx, p.cfg.KV, slugs, &tally)
		return err
	}); err != nil {
		return 0, err
	}
	printed := time.Since(start)
	// The announcements of every establishment, when the notifier tells them in one read: its
	// answer for each of the log's establishments, the reconciliation then asking it nothing.
	var announced []int64
	if n, ok := p.cfg.Notifier.(AllAnnouncedNotifier); ok {
		if err := p.retry(ctx, "read the last announcements", func() error {
			announced = make([]int64, len(slugs))
			return n.AllAnnounced(ctx, func(slug string, revision int64) {
				if i, found := slices.BinarySearch(slugs, slug); found {
					announced[i] = revision
				}
			})
		}); err != nil {
			return 0, err
		}
	}
	p.logger.Debug("projections: the replay read what it reconciles with", "establishments", len(slugs),
		"log_listed", listed.Round(time.Millisecond), "bucket_read", (printed - listed).Round(time.Millisecond),
		"announcements_read", (time.Since(start) - printed).Round(time.Millisecond))
	// The fingerprints of the bundles of the bucket replaced, if any, read while the first pass
	// replays: only its reconciliation needs them.
	var floors []uint64
	floorsRead := make(chan error, 1)
	if p.cfg.Replaces != nil {
		go func() {
			floorsRead <- p.retry(ctx, "read the bundles of the bucket replaced", func() (err error) {
				floors, err = p.storedPrints(ctx, p.cfg.Replaces, slugs, nil)
				return err
			})
		}()
	} else {
		floorsRead <- nil
	}
	defer func() { <-floorsRead }()
	workers := min(p.cfg.Workers, runtime.GOMAXPROCS(0))
	passes := passesFor(len(slugs), p.cfg.CacheSize, workers)
	// The files of the later passes; nil when there is one pass, or when they cannot be kept, the
	// passes then reading the log each.
	var sp *spill
	logEachPass := func(err error) {
		p.logger.Warn("the replay reads the log once per pass", "passes", passes, "err", err)
		if sp != nil {
			sp.close()
			sp = nil
		}
	}
	if passes > 1 {
		if sp, err = newSpill(p.cfg.SpillDir, passes); err != nil {
			logEachPass(err)
		}
	}
	defer func() {
		if sp != nil {
			sp.close()
		}
	}()
	unreadable := func(seq uint64, err error) {
		p.logger.Error("skip unreadable message of the event log", "seq", seq, "err", err)
	}
	generation := time.Now().UnixNano()
	for pass := range passes {
		keep := func(slug string) bool { return passOf(slug, passes) == pass }
		// The first pass reads the log, and writes the records of the others to their files; each
		// later pass reads its file.
		read := func(ctx context.Context, dispatch func(events.Record) error) (uint64, error) {
			if sp != nil && pass > 0 {
				err := sp.each(pass, keep, func(slug string, seq uint64, data []byte) error {
					rec, err := events.DecodeRecord(slug, seq, data)
					if err != nil {
						unreadable(seq, err)
						return nil
					}
					return dispatch(rec)
				})
				if errors.Is(err, errSpill) {
					logEachPass(err) // the pass is made again, from the log
				}
				return last, err
			}
			if sp != nil {
				if err := sp.reset(); err != nil {
					logEachPass(err)
				}
			}
			if sp == nil {
				return last, p.cfg.Store.ReplayPart(ctx, 1, last, keep, dispatch, nil, unreadable)
			}
			other := func(slug string, seq uint64, data []byte) error {
				sp.add(passOf(slug, passes), slug, seq, data)
				return nil
			}
			if err := p.cfg.Store.ReplayPart(ctx, 1, last, keep, dispatch, other, unreadable); err != nil {
				return 0, err
			}
			if err := sp.flush(); err != nil {
				logEachPass(err)
			}
			return last, nil
		}
		var lanes []*lane
		err := p.retry(ctx, "replay a share of the establishments", func() error {
			// A pass that failed is made again from the start of what it reads, with lanes that
			// know none of the states it saved.
			lanes = make([]*lane, workers)
			for i := range lanes {
				lanes[i] = newLane(p, p.cfg.CacheSize/workers)
				lanes[i].replay = generation
			}
			_, err := fanOut(ctx, lanes, recordSlug, p.replayRecord, read)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("replay: %w", err)
		}
		if floorsRead != nil {
			err := <-floorsRead
			floorsRead <- nil // for the deferred receive
			if err != nil {
				return 0, err
			}
		}
		var share []storedPrint
		for i, slug := range slugs {
			if keep(slug) {
				s := storedPrint{slug: slug, print: prints[i]}
				if floors != nil {
					s.floor = floors[i]
				}
				if announced != nil {
					s.announced, s.knownAnnounced = announced[i], true
				}
				share = append(share, s)
			}
		}
		if err := p.reconcile(ctx, lanes, share, &tally); err != nil {
			return 0, fmt.Errorf("reconcile: %w", err)
		}
		if passes > 1 {
			if sp != nil && pass > 0 {
				sp.done(pass)
			}
			p.logger.Info("projections replayed a share of the establishments", "pass", pass+1, "passes", passes, "establishments", len(share))
		}
	}
	if tally.absent > 0 {
		// One line, whatever their number: a count and the first few by slug.
		p.logger.Warn("stored bundles of establishments absent from the log are left as they are",
			"count", tally.absent, "examples", tally.examples)
	}
	p.logger.Info("projections reconciled with the stored bundles", "establishments", len(slugs), "written", tally.written)
	p.replayed = time.Now().UTC()
	if err := p.retry(ctx, "write the checkpoint", func() error {
		return p.saveCheckpoint(ctx, last)
	}); err != nil {
		return 0, err
	}
	return last, nil
}

// passesFor returns how many passes a replay of n establishments takes on workers lanes sharing a
// cache of size establishments: enough for each lane's share of a pass to fit its part of the
// cache, with three standard deviations to spare, since shares fall by hash. A replay pass stores
// nothing and waits for nothing, so it runs one lane per CPU at most, each with a large part of
// the cache: many small lanes would hold shares too uneven for their parts.
func passesFor(n, size, workers int) int {
	perLane := float64(size / workers)
	for passes := 1; ; passes++ {
		share := float64(n) / float64(passes*workers)
		if share+3*math.Sqrt(share) <= perLane || share < 1 {
			return passes
		}
	}
}

// passOf returns the pass of a replay in n passes that replays the establishment slug. It takes the
// high bits of the slug's hash, where laneOf takes its remainder by the number of workers, so that
// a pass's share is spread over every worker.
func passOf(slug string, n int) int { return int((xxhash.Sum64String(slug) >> 32) % uint64(n)) }

// newLanes returns one empty lane per worker, sharing the cache size between them.
func (p *Projector) newLanes() []*lane {
	lanes := make([]*lane, p.cfg.Workers)
	for i := range lanes {
		lanes[i] = newLane(p, p.cfg.CacheSize/p.cfg.Workers)
	}
	return lanes
}

// replayRecord replays rec on its establishment, storing nothing.
func (p *Projector) replayRecord(ctx context.Context, l *lane, rec events.Record) error {
	t, err := l.establishment(ctx, rec)
	if err != nil || t == nil || rec.Sequence <= t.seq {
		return err
	}
	t.replay(p.logger, p.cfg.FilesURL, rec, &l.scratch)
	return nil
}

// follow projects the records from sequence last+1 on as they come, storing each change, and
// writes a checkpoint every CheckpointEvery. Records finish out of order across workers; the
// position moves past a record only once every record before it is stored.
func (p *Projector) follow(ctx context.Context, lanes []*lane, last, recheckTo uint64) error {
	reached := newWatermark()
	dispatched := last
	var (
		checkpointing sync.Mutex // held by whoever writes a checkpoint
		saved         = time.Now()
		savedAt       = last // position of the last checkpoint
	)
	save := func(ctx context.Context, force bool) {
		if !checkpointing.TryLock() {
			return // another worker is saving the position
		}
		defer checkpointing.Unlock()
		pos := p.Position()
		if pos <= savedAt || !force && time.Since(saved) < p.cfg.CheckpointEvery {
			return
		}
		saved, savedAt = time.Now(), pos
		// A checkpoint not saved only makes the next start read a little more of the log.
		if err := p.saveCheckpoint(ctx, pos); err != nil && ctx.Err() == nil {
			p.logger.Warn("checkpoint not saved", "err", err)
		}
	}
	moved := func(ctx context.Context, seq uint64) {
		p.advance(seq)
		save(ctx, false)
	}
	// A position reached after the last checkpoint, and no record since, is saved all the same
	// within CheckpointEvery: other processes learn from the checkpoint how far projection went.
	trailing, stopTrailing := context.WithCancel(ctx)
	defer stopTrailing()
	go func() {
		t := time.NewTicker(p.cfg.CheckpointEvery)
		defer t.Stop()
		for {
			select {
			case <-trailing.Done():
				return
			case <-t.C:
				save(trailing, true)
			}
		}
	}()
	_, err := fanOut(ctx, lanes, recordSlug, func(ctx context.Context, l *lane, rec events.Record) error {
		if err := p.handle(ctx, l, rec, rec.Sequence <= recheckTo); err != nil {
			return err
		}
		if seq, ok := reached.finish(rec.Sequence); ok {
			moved(ctx, seq)
		}
		return nil
	}, func(ctx context.Context, dispatch func(events.Record) error) (uint64, error) {
		skipped := func(seq uint64) {
			dispatched = max(dispatched, seq)
			reached.add(seq)
			if seq, ok := reached.finish(seq); ok {
				p.advance(seq)
			}
		}
		return 0, p.read(ctx, last+1, skipped, func(rec events.Record) error {
			if rec.Sequence <= dispatched {
				return nil // delivered again: already projected or on its way
			}
			dispatched = rec.Sequence
			reached.add(rec.Sequence)
			return dispatch(rec)
		})
	})
	if ctx.Err() != nil {
		// Stopping: the position reached is saved, so the next start has less to do again.
		save, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if werr := p.saveCheckpoint(save, p.Position()); werr != nil {
			p.logger.Warn("checkpoint not saved at stop", "err", werr)
		}
	}
	return err
}

// read passes the records of the log from sequence from to fn, those stored now and those to come,
// until ctx ends. A stored message that is not a readable record (events.ErrInvalidRecord) is
// logged and passed over, so that one bad message never stops the projection, and skipped is told
// its sequence.
func (p *Projector) read(ctx context.Context, from uint64, skipped func(seq uint64), fn func(events.Record) error) error {
	seen := from - 1 // last sequence passed to fn
	var skip uint64  // messages passed over after seen
	accept := func(rec events.Record) error {
		if err := fn(rec); err != nil {
			return err
		}
		seen, skip = rec.Sequence, 0
		return nil
	}
	for {
		err := p.cfg.Store.Follow(ctx, seen+1+skip, accept)
		if err == nil || ctx.Err() != nil || !errors.Is(err, events.ErrInvalidRecord) {
			return err
		}
		// The first message from start on is unreadable, and nothing readable lies between seen
		// and it, or the consumer would have delivered it first: every sequence up to start is
		// absent or unreadable. Resume one message further.
		skip++
		p.logger.Error("skip unreadable message of the event log", "after_seq", seen, "skipped", skip, "err", err)
		skipped(seen + skip)
	}
}

// reconciled counts what a replay's reconciliation did, over all its passes.
type reconciled struct {
	mu       sync.Mutex
	total    int // establishments of the log
	done     int // establishments reconciled
	written  int
	absent   int
	examples []string // the first absentExamples absent ones by slug
}

func (r *reconciled) noteAbsent(slug string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.absent++
	i, _ := slices.BinarySearch(r.examples, slug)
	if r.examples = slices.Insert(r.examples, i, slug); len(r.examples) > absentExamples {
		r.examples = r.examples[:absentExamples]
	}
}

// addAbsent adds to r the establishments absent from the log o noted.
func (r *reconciled) addAbsent(o *reconciled) {
	for _, slug := range o.examples {
		r.noteAbsent(slug)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.absent += o.absent - len(o.examples)
}

// reconcile stores, for every establishment of slugs, replayed by lanes, the bundle that follows
// the one found in the bucket, each worker its share of the establishments. Content equal to the
// stored content keeps the stored revision; different content gets max(replayed revision, stored
// revision + 1).
func (p *Projector) reconcile(ctx context.Context, lanes []*lane, share []storedPrint, tally *reconciled) error {
	_, err := fanOut(ctx, lanes, func(s storedPrint) string { return s.slug }, func(ctx context.Context, l *lane, s storedPrint) error {
		written, err := p.reconcileOne(ctx, l, s)
		if errors.Is(err, errAbsentFromLog) {
			tally.noteAbsent(s.slug)
			err = nil
		}
		tally.mu.Lock()
		if written {
			tally.written++
		}
		tally.done++
		done := tally.done
		tally.mu.Unlock()
		if err == nil && p.cfg.Progress != nil {
			p.cfg.Progress(done, tally.total)
		}
		return err
	}, func(ctx context.Context, dispatch func(storedPrint) error) (uint64, error) {
		for _, s := range share {
			if err := dispatch(s); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	return err
}

// storedPrint is an establishment of the log and the fingerprint of the summary of its stored
// bundle, 0 when none was stored, unknownPrint when its summary has none; floor is that of its
// bundle in Config.Replaces.
type storedPrint struct {
	slug         string
	print, floor uint64
	// announced is the last revision announced of the establishment when the replay began, when
	// knownAnnounced says the notifier told it; else the notifier is asked.
	announced      int64
	knownAnnounced bool
}

// storedPrints returns the fingerprint of the summary of every bundle of kv at the index of its
// establishment in slugs (sorted): 0 where none is stored, unknownPrint where its summary has no
// fingerprint. It counts in tally, unless nil, the bundles of establishments absent from slugs.
// It reads the fingerprints from the bundles' headers (headerPrints), or, where a bundle has
// none, every bundle once, in the bucket's order. One read of the bucket in its order costs far
// less than a read per establishment, each of which loads a block of the store's files: the
// reconciliation of an establishment whose stored bundle is the replayed one reads nothing more.
func (p *Projector) storedPrints(ctx context.Context, kv Bucket, slugs []string, tally *reconciled) ([]uint64, error) {
	if pb, ok := kv.(printedBucket); ok {
		var absent reconciled
		prints, err := headerPrints(ctx, pb, slugs, &absent)
		if !errors.Is(err, errNoPrints) {
			if err == nil && tally != nil {
				tally.addAbsent(&absent)
			}
			return prints, err
		}
		// Bundles stored without their fingerprint, by an earlier version: they are read.
	}
	w, err := kv.Watch(ctx, dockey.Watch, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("read stored bundles: %w", err)
	}
	defer func() {
		_ = w.Stop()
		// A delivery blocked on a full channel when the read stopped early ends, and the
		// channel closes.
		go func() {
			for range w.Updates() {
			}
		}()
	}()
	prints := make([]uint64, len(slugs))
	for {
		var (
			e  jetstream.KeyValueEntry
			ok bool
		)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok = <-w.Updates():
		}
		switch {
		case !ok:
			return nil, errors.New("read stored bundles: the watch ended before the last one")
		case e == nil:
			return prints, nil // every bundle stored when the watch started
		}
		slug, valid := dockey.SlugOf(e.Key())
		if !valid {
			continue
		}
		i, found := slices.BinarySearch(slugs, slug)
		if !found {
			if tally != nil {
				tally.noteAbsent(slug)
			}
			continue
		}
		prints[i] = unknownPrint
		if s, err := projections.SummarizeStored(e.Value()); err == nil && s.Fingerprint() != 0 {
			prints[i] = s.Fingerprint()
		}
	}
}

// headerPrints returns what storedPrints does from the fingerprints in the bundles' headers, or
// errNoPrints at the first bundle of an establishment of slugs stored without one. It notes in
// absent the bundles of establishments absent from slugs.
func headerPrints(ctx context.Context, kv printedBucket, slugs []string, absent *reconciled) ([]uint64, error) {
	prints := make([]uint64, len(slugs))
	err := kv.prints(ctx, func(key string, print uint64, known bool) error {
		slug, valid := dockey.SlugOf(key)
		if !valid {
			return nil
		}
		i, found := slices.BinarySearch(slugs, slug)
		switch {
		case !found:
			if print != 0 || !known { // stored, not deleted
				absent.noteAbsent(slug)
			}
		case !known:
			return errNoPrints
		default:
			prints[i] = print // 0 once deleted
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return prints, nil
}

// unknownPrint stands for the fingerprint of a stored bundle whose summary has none, or that cannot
// be read: one to read again.
const unknownPrint = math.MaxUint64

// lastAnnounced returns the last revision announced of s's establishment when known, -1 for the
// notifier to be asked.
func (s storedPrint) lastAnnounced() int64 {
	if !s.knownAnnounced {
		return -1
	}
	return s.announced
}

// errAbsentFromLog marks a bundle stored for an establishment the log never created.
var errAbsentFromLog = errors.New("stored bundle of an establishment absent from the log")

// absentExamples is how many slugs the warning about bundles absent from the log names.
const absentExamples = 5

// reconcileOne reconciles one establishment of the replay with its stored bundle, whose summary's
// fingerprint is s.print, and reports whether it stored a bundle.
func (p *Projector) reconcileOne(ctx context.Context, l *lane, s storedPrint) (bool, error) {
	slug, print := s.slug, s.print
	t, ok := l.cache.Peek(slug)
	if !ok {
		parsed, err := domain.ParseSlug(slug)
		if err != nil {
			return false, nil // its records were skipped
		}
		if t, err = l.savedState(ctx, parsed); err != nil {
			return false, err
		}
	}
	switch {
	case (t == nil || t.stored == nil) && print == 0:
		return false, nil // nothing was stored, nothing is to be
	case t != nil && t.stored != nil && t.stored.Fingerprint() == print:
		// What the replay would have stored was stored when the bucket was read: nothing to
		// render, nor to read again.
		return false, p.reannounce(ctx, t, s.lastAnnounced())
	}
	var (
		stored *projections.BundleSummary // none when the bucket held none: only this projector writes to it
		err    error
	)
	if print != 0 {
		if stored, err = p.summaryIn(ctx, p.cfg.KV, slug); err != nil {
			return false, err
		}
	}
	if stored == nil && p.cfg.Replaces != nil && t != nil && t.stored != nil {
		return p.replace(ctx, t, s.floor)
	}
	if t == nil || t.stored == nil {
		// The log holds no creation for this slug, or its replayed state cannot be read back.
		if stored != nil {
			return false, errAbsentFromLog
		}
		return false, nil
	}
	replayed := t.stored
	t.stored = stored
	if stored.Same(replayed) {
		// What the replay would have stored is stored: nothing to render.
		return false, p.reannounce(ctx, t, s.lastAnnounced())
	}
	u := projections.Next(stored, t.render(p.cfg.FilesURL, nil), replayed.Revision())
	u.Bundle.Sequence = replayed.Sequence() // the record a projection one at a time last stored
	if !u.Write {
		return false, p.reannounce(ctx, t, s.lastAnnounced())
	}
	ok, err = p.store(ctx, u)
	if ok {
		t.stored = projections.Summarize(&u.Bundle)
	}
	return ok, err
}

// handle projects one live record on its establishment. recheck says the record may have been
// projected before the last stop: when it changes nothing stored, the announcement of the stored
// revision is checked.
func (p *Projector) handle(ctx context.Context, l *lane, rec events.Record, recheck bool) error {
	t, err := l.establishment(ctx, rec)
	if err != nil || t == nil || rec.Sequence <= t.seq {
		return err // no establishment, or a record delivered again
	}
	t.apply(p.logger, rec)
	if recheck && t.stored != nil && rec.Sequence <= t.stored.Sequence() {
		// Projected before the last stop, after the checkpoint: the stored bundle was written by
		// this record or a later one, and its announcement may be what was lost.
		if len(rec.Events) > 0 {
			t.changed = rec.Events[0].Time
		}
		return p.reannounce(ctx, t, -1)
	}
	u, ok := t.project(rec.Sequence, p.cfg.FilesURL)
	if !ok || !u.Write {
		return nil
	}
	if len(rec.Events) > 0 {
		t.changed = rec.Events[0].Time
	}
	stored, err := p.store(ctx, u)
	if err != nil {
		return err
	}
	if stored {
		t.stored = projections.Summarize(&u.Bundle)
	}
	return nil
}

// store writes the bundle of u, retrying until it is stored or ctx ends, then tells the
// notifier when the revision rose. It reports false, without error, for a bundle larger than
// Config.MaxValueSize: the establishment keeps its previous bundle until a later change fits.
func (p *Projector) store(ctx context.Context, u projections.Update) (bool, error) {
	b := &u.Bundle
	if name, ok := allJSON(b); !ok {
		// Render writes JSON; this is the one check of it, here rather than at every read
		// node's every start (dockey.DecodeShared takes a body whose tag is its own as it is).
		p.logger.Error("rendered document is not JSON, previous bundle kept", "slug", b.Slug,
			"revision", b.Revision, "document", name)
		return false, nil
	}
	projections.Compress(b)
	value, err := dockey.EncodeBundle(b)
	if err != nil {
		return false, err
	}
	if len(value) > p.cfg.MaxValueSize {
		p.logger.Error("bundle too large, previous bundle kept", "slug", b.Slug,
			"revision", b.Revision, "bytes", len(value), "max_bytes", p.cfg.MaxValueSize)
		return false, nil
	}
	key := dockey.Key(b.Slug)
	put := p.cfg.KV.Put
	if pb, ok := p.cfg.KV.(printedBucket); ok {
		print := projections.StoredPrint(b)
		put = func(ctx context.Context, key string, value []byte) (uint64, error) {
			return pb.putPrinted(ctx, key, value, print)
		}
	}
	if err := p.retry(ctx, fmt.Sprintf("store bundle %s at revision %d", key, b.Revision), func() error {
		_, err := put(ctx, key, value)
		return err
	}); err != nil {
		return false, err
	}
	if len(u.Resources) > 0 {
		if err := p.notify(ctx, Change{Slug: b.Slug, Revision: b.Revision, Resources: u.Resources}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// allJSON reports whether every body of b is JSON, and otherwise names a document that is not.
// Bodies equal to one already checked (a menu the same in two languages) are not checked again.
func allJSON(b *dockey.Bundle) (string, bool) {
	var bad *dockey.Document
	var checked [][]byte
	projections.EachDocument(b, func(_ string, d *dockey.Document) {
		if bad != nil || len(d.Body) == 0 || slices.ContainsFunc(checked, func(c []byte) bool { return bytes.Equal(c, d.Body) }) {
			return
		}
		if !events.ValidJSON(d.Body) {
			bad = d
		}
		checked = append(checked, d.Body)
	})
	if bad == nil {
		return "", true
	}
	name := ""
	projections.EachDocument(b, func(n string, d *dockey.Document) {
		if bytes.Equal(d.Body, bad.Body) && name == "" {
			name = n
		}
	})
	return name, false
}

// notify tells the notifier about c, retrying until it succeeds or ctx ends: a revision stored
// but never announced would leave receivers on an older one.
func (p *Projector) notify(ctx context.Context, c Change) error {
	if p.cfg.Notifier == nil {
		return nil
	}
	return p.retry(ctx, fmt.Sprintf("notify change of %s at revision %d", c.Slug, c.Revision), func() error {
		return p.cfg.Notifier.Changed(ctx, c)
	})
}

// reannounce announces the stored bundle of t again, with every resource, when it is public, it
// changed within ReannounceWithin and the notifier's last announcement for it, last when known
// (-1 asks the notifier), is older.
func (p *Projector) reannounce(ctx context.Context, t *tracked, last int64) error {
	n, ok := p.cfg.Notifier.(AnnouncedNotifier)
	if !ok || t.stored == nil || t.stored.Status() != dockey.StatusActive || p.cfg.Now().Sub(t.changed) > ReannounceWithin {
		return nil // nothing to announce, or nothing public
	}
	s := t.stored
	slug := string(t.agg.Slug)
	if last < 0 {
		err := p.retry(ctx, "read the last announcement of "+slug, func() (err error) {
			last, err = n.Announced(ctx, slug)
			if errors.Is(err, events.ErrInvalidSignal) {
				// An announcement that cannot be read is as none: the stored revision is announced.
				last, err = 0, nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	if last >= s.Revision() {
		return nil
	}
	p.logger.Info("announcing a stored revision whose announcement was lost", "slug", slug, "revision", s.Revision(), "announced", last)
	return p.notify(ctx, Change{Slug: slug, Revision: s.Revision(), Resources: s.Resources()})
}
