package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/events"
)

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
	r := &replay{p: p, start: time.Now(), generation: time.Now().UnixNano()}
	if err := r.readLog(ctx); err != nil {
		return 0, err
	}
	if err := r.readStored(ctx); err != nil {
		return 0, err
	}
	r.readFloors(ctx)
	defer func() { <-r.floorsRead }()
	r.openSpill()
	defer r.closeSpill()
	for pass := range r.passes {
		if err := r.pass(ctx, pass); err != nil {
			return 0, err
		}
	}
	return r.last, r.finish(ctx)
}

// replay is one replay of the whole log: what it read before its passes, and its temporary files.
type replay struct {
	p          *Projector
	start      time.Time
	listed     time.Duration // how long reading the log's establishments took
	generation int64         // tells the states this replay writes from those of any other

	last      uint64         // the log's last sequence when the replay began
	slugs     []string       // the log's establishments, sorted
	prints    []uint64       // the fingerprint of the stored bundle of each of slugs
	seqs      []uint64       // the sequence of the write of each in the bucket's stream
	announced []Announcement // the last announcement of each of slugs; nil when not known
	tally     reconciled

	// floors are the fingerprints of the bundles of Config.Replaces, read while the first pass
	// replays; floorsRead tells when, and holds nil once taken.
	floors     []uint64
	floorsRead chan error

	workers, passes int
	// sp holds the records of the later passes; nil when there is one pass, or when they cannot
	// be kept, the passes then reading the log each.
	sp *spill
}

// readLog reads the log's last sequence, then its establishments, and removes the checkpoint:
// a replay interrupted is started again at the next start, not resumed from an older checkpoint.
func (r *replay) readLog(ctx context.Context) error {
	// The position first: every establishment with a record up to it is among the slugs.
	p := r.p
	var err error
	if r.last, err = p.cfg.Store.LastStreamSequence(ctx); err != nil {
		return err
	}
	if r.slugs, err = p.cfg.Store.Slugs(ctx); err != nil {
		return err
	}
	r.listed = time.Since(r.start)
	r.workers = min(p.cfg.Workers, runtime.GOMAXPROCS(0))
	r.passes = passesFor(len(r.slugs), p.cfg.CacheSize, r.workers)
	return p.retry(ctx, "remove the checkpoint", func() error {
		err := p.cfg.State.Delete(ctx, checkpointKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	})
}

// readStored reads the fingerprints of the stored bundles and, when the notifier tells them in
// one read, the announcements of every establishment: its answer for each of the log's
// establishments, the reconciliation then asking it nothing.
func (r *replay) readStored(ctx context.Context) error {
	p := r.p
	if err := p.retry(ctx, "read the stored bundles", func() (err error) {
		r.tally = reconciled{total: len(r.slugs)}
		r.prints, r.seqs, err = storedPrints(ctx, p.cfg.KV, r.slugs, &r.tally)
		return err
	}); err != nil {
		return err
	}
	printed := time.Since(r.start)
	// Without Announcements, nothing is announced again: the announcements are not needed.
	if n := p.cfg.AllAnnouncements; n != nil && p.cfg.Announcements != nil {
		if err := p.retry(ctx, "read the last announcements", func() error {
			r.announced = make([]Announcement, len(r.slugs))
			return n.AllAnnounced(ctx, func(slug string, a Announcement) {
				if i, found := slices.BinarySearch(r.slugs, slug); found {
					r.announced[i] = a
				}
			})
		}); err != nil {
			return err
		}
	}
	p.logger.Debug("projections: the replay read what it reconciles with", "establishments", len(r.slugs),
		"log_listed", r.listed.Round(time.Millisecond), "bucket_read", (printed - r.listed).Round(time.Millisecond),
		"announcements_read", (time.Since(r.start) - printed).Round(time.Millisecond))
	return nil
}

// readFloors starts reading the fingerprints of the bundles of the bucket replaced, if any, while
// the first pass replays: only its reconciliation needs them.
func (r *replay) readFloors(ctx context.Context) {
	r.floorsRead = make(chan error, 1)
	if r.p.cfg.Replaces == nil {
		r.floorsRead <- nil
		return
	}
	go func() {
		r.floorsRead <- r.p.retry(ctx, "read the bundles of the bucket replaced", func() (err error) {
			r.floors, _, err = storedPrints(ctx, r.p.cfg.Replaces, r.slugs, nil)
			return err
		})
	}()
}

// waitFloors waits until the floors are read, and returns why they could not be.
func (r *replay) waitFloors() error {
	err := <-r.floorsRead
	r.floorsRead <- nil // for the next pass, and the deferred receive
	return err
}

// openSpill creates the files of the later passes, when there are several.
func (r *replay) openSpill() {
	if r.passes <= 1 {
		return
	}
	var err error
	if r.sp, err = newSpill(r.p.cfg.SpillDir, r.passes); err != nil {
		r.readEachPass(err)
	}
}

func (r *replay) closeSpill() {
	if r.sp != nil {
		r.sp.close()
	}
}

// readEachPass gives up the files for err: every later pass reads the log.
func (r *replay) readEachPass(err error) {
	r.p.logger.Warn("the replay reads the log once per pass", "passes", r.passes, "err", err)
	r.closeSpill()
	r.sp = nil
}

// pass replays the share of the establishments of pass, then reconciles it with the bucket.
func (r *replay) pass(ctx context.Context, pass int) error {
	p := r.p
	keep := func(slug string) bool { return passOf(slug, r.passes) == pass }
	var lanes []*lane
	err := p.retry(ctx, "replay a share of the establishments", func() error {
		// A pass that failed is made again from the start of what it reads, with lanes that
		// know none of the states it saved.
		lanes = make([]*lane, r.workers)
		for i := range lanes {
			lanes[i] = newLane(p, p.cfg.CacheSize/r.workers)
			lanes[i].replay = r.generation
		}
		_, err := fanOut(ctx, lanes, recordSlug, p.replayRecord, r.source(pass, keep))
		return err
	})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := r.waitFloors(); err != nil {
		return err
	}
	share := r.share(keep)
	if err := p.reconcile(ctx, lanes, share, &r.tally); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if r.passes > 1 {
		if r.sp != nil && pass > 0 {
			r.sp.done(pass)
		}
		p.logger.Info("projections replayed a share of the establishments", "pass", pass+1, "passes", r.passes, "establishments", len(share))
	}
	return nil
}

// source returns what reads the records of pass: the first pass reads the log, and writes the
// records of the others to their files; each later pass reads its file.
func (r *replay) source(pass int, keep func(string) bool) func(context.Context, func(events.Record) error) (uint64, error) {
	return func(ctx context.Context, dispatch func(events.Record) error) (uint64, error) {
		if r.sp != nil && pass > 0 {
			err := r.sp.each(pass, keep, func(slug string, seq uint64, data []byte) error {
				rec, err := events.DecodeRecord(slug, seq, data)
				if err != nil {
					r.unreadable(seq, err)
					return nil
				}
				return dispatch(rec)
			})
			if errors.Is(err, errSpill) {
				r.readEachPass(err) // the pass is made again, from the log
			}
			return r.last, err
		}
		if r.sp != nil {
			if err := r.sp.reset(); err != nil {
				r.readEachPass(err)
			}
		}
		if r.sp == nil {
			return r.last, r.p.cfg.Store.ReplayPart(ctx, 1, r.last, keep, dispatch, nil, r.unreadable)
		}
		other := func(slug string, seq uint64, data []byte) error {
			r.sp.add(passOf(slug, r.passes), slug, seq, data)
			return nil
		}
		if err := r.p.cfg.Store.ReplayPart(ctx, 1, r.last, keep, dispatch, other, r.unreadable); err != nil {
			return 0, err
		}
		if err := r.sp.flush(); err != nil {
			r.readEachPass(err)
		}
		return r.last, nil
	}
}

func (r *replay) unreadable(seq uint64, err error) {
	r.p.logger.Error("skip unreadable message of the event log", "seq", seq, "err", err)
}

// share returns the establishments keep accepts, with what was read of their stored bundles and
// announcements.
func (r *replay) share(keep func(string) bool) []storedPrint {
	var share []storedPrint
	for i, slug := range r.slugs {
		if !keep(slug) {
			continue
		}
		s := storedPrint{slug: slug, print: r.prints[i], seq: r.seqs[i]}
		if r.floors != nil {
			s.floor = r.floors[i]
		}
		if r.announced != nil {
			s.announced, s.knownAnnounced = r.announced[i], true
		}
		share = append(share, s)
	}
	return share
}

// finish reports what the reconciliation did and writes the checkpoint.
func (r *replay) finish(ctx context.Context) error {
	p := r.p
	if r.tally.absent > 0 {
		// One line, whatever their number: a count and the first few by slug.
		p.logger.Warn("stored bundles of establishments absent from the log are left as they are",
			"count", r.tally.absent, "examples", r.tally.examples)
	}
	p.logger.Info("projections reconciled with the stored bundles", "establishments", len(r.slugs), "written", r.tally.written)
	p.replayed = time.Now().UTC()
	return p.retry(ctx, "write the checkpoint", func() error {
		return p.saveCheckpoint(ctx, r.last)
	})
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
