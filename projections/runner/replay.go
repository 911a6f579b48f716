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
