package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
)

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

// stallRetries is how long the projector tries again every second to make the consumer of a
// follow that stalled, before its run ends with the error and its supervisor starts it again.
const stallRetries = 30 * time.Second

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
	var stalled time.Time // when the last follow stalled, while its next has no consumer yet
	for {
		err := p.cfg.Store.Follow(ctx, seen+1+skip, accept)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, events.ErrStalled):
			// The consumer went with a cluster node and is not made again yet: a new one is.
			p.logger.Warn("the event log's consumer delivers nothing while records wait; following again", "after_seq", seen+skip)
			stalled = time.Now()
			continue
		case errors.Is(err, events.ErrNoConsumer) && !stalled.IsZero() && time.Since(stalled) < stallRetries:
			// The cluster that lost the consumer may still be electing its leaders.
			p.logger.Warn("the event log's consumer not made yet; trying again in a second", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
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

// handle projects one live record on its establishment. recheck says the record may have been
// projected before the last stop: when it changes nothing stored, the announcement of the stored
// revision is checked.
func (p *Projector) handle(ctx context.Context, l *lane, rec events.Record, recheck bool) error {
	t, err := l.establishment(ctx, rec)
	if err != nil || t == nil || rec.Sequence <= t.seq {
		return err // no establishment, or a record delivered again
	}
	defer func() { t.storedValue = nil }()
	had := !t.agg.Ahead.IsZero()
	t.apply(p.logger, rec)
	if recheck && t.stored != nil && rec.Sequence <= t.stored.Sequence() {
		// Projected before the last stop, after the checkpoint: the stored bundle was written by
		// this record or a later one, and its announcement may be what was lost.
		if len(rec.Events) > 0 {
			t.changed = rec.Events[0].Time
		}
		return p.reannounce(ctx, t, unknownAnnouncement, 0)
	}
	aheadValue, err := p.knowAhead(ctx, t, had)
	if err != nil {
		return err
	}
	u, ok := t.project(rec.Sequence, p.cfg.FilesURL)
	if !ok {
		return nil
	}
	current := t.stored
	if u.Write {
		current = projections.Summarize(&u.Bundle)
	}
	// The day ahead is stored first: it is served beside the current bundle it names only.
	a := t.projectAhead(current, p.cfg.FilesURL)
	if a.Write {
		codingsFrom(&a.Bundle, aheadValue, t.storedValue)
	}
	if err := p.storeAhead(ctx, t, a); err != nil {
		return err
	}
	if u.Write {
		if len(rec.Events) > 0 {
			t.changed = rec.Events[0].Time
		}
		if err := p.codingsOfAhead(ctx, t, &u.Bundle, aheadValue); err != nil {
			return err
		}
		codingsFrom(&u.Bundle, t.storedValue)
		stored, err := p.store(ctx, u)
		if err != nil {
			return err
		}
		if stored {
			t.stored = current
		}
	}
	return p.dropAhead(ctx, t, a)
}
