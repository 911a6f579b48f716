package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// aggregate is one establishment as the write side holds it: the domain state, where it stands in
// the log, and the idempotency keys applied recently. It is changed only by the holder of the
// establishment's lock.
type aggregate struct {
	est       *domain.Establishment
	version   uint64 // stream sequence of the establishment's last record; 0 before any
	commandID string // command id of that record
	applied   map[string]appliedCommand
	// folded counts the records folded into est since the last snapshot was read or written.
	folded int
}

func newAggregate(slug domain.Slug) *aggregate {
	return &aggregate{est: domain.New(slug)}
}

// apply folds one record into a.
func (a *aggregate) apply(rec events.Record, c *Commands) {
	if len(rec.Events) > 0 {
		a.remember(rec.CommandID, rec.Sequence, len(rec.Events), rec.Events[0].Time, c.now())
	}
	for _, env := range rec.Events {
		ev, err := domain.DecodeEventWith(env.Type, env.SchemaVersion, env.Payload, events.Unmarshal)
		if err != nil {
			c.logger.Warn("skipping undecodable event", "establishment", rec.Establishment, "sequence", rec.Sequence, "type", env.Type, "err", err)
			continue
		}
		a.est.Apply(ev)
	}
	a.version, a.commandID = rec.Sequence, rec.CommandID
	a.folded++
}

// snapshotFormat names the stored state: this package's envelope around domain's state.
func snapshotFormat() string { return "app/1+" + domain.StateFormat() }

// storedState is the state of a snapshot.
type storedState struct {
	Establishment json.RawMessage           `json:"establishment"`
	Applied       map[string]appliedCommand `json:"applied,omitempty"`
}

func (a *aggregate) snapshot() (events.Snapshot, error) {
	est, err := domain.EncodeState(a.est)
	if err != nil {
		return events.Snapshot{}, err
	}
	state, err := json.Marshal(storedState{Establishment: est, Applied: a.applied})
	if err != nil {
		return events.Snapshot{}, err
	}
	return events.Snapshot{
		Establishment: string(a.est.Slug), Sequence: a.version, CommandID: a.commandID,
		Format: snapshotFormat(), State: state,
	}, nil
}

// fromSnapshot returns the aggregate a snapshot holds, or false when it is not of this code's
// format or cannot be read.
func fromSnapshot(slug domain.Slug, snap events.Snapshot) (*aggregate, bool) {
	if snap.Format != snapshotFormat() {
		return nil, false
	}
	var st storedState
	if err := json.Unmarshal(snap.State, &st); err != nil {
		return nil, false
	}
	est, err := domain.DecodeState(slug, st.Establishment)
	if err != nil {
		return nil, false
	}
	return &aggregate{est: est, version: snap.Sequence, commandID: snap.CommandID, applied: st.Applied}, true
}

// locks serialises the commands on one establishment inside a process. A lock exists while
// somebody holds or waits for it, so the table is bounded by the requests in flight.
type locks struct {
	mu    sync.Mutex
	slugs map[domain.Slug]*slugLock
}

type slugLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks slug and returns the function that unlocks it.
func (l *locks) lock(slug domain.Slug) func() {
	l.mu.Lock()
	if l.slugs == nil {
		l.slugs = map[domain.Slug]*slugLock{}
	}
	sl := l.slugs[slug]
	if sl == nil {
		sl = &slugLock{}
		l.slugs[slug] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.slugs, slug)
		}
		l.mu.Unlock()
	}
}

// repository loads aggregates from the cache, their snapshots and the log.
type repository struct {
	log       eventLog
	snapshots snapshotStore // nil: no snapshots
	cache     *lru.Cache[domain.Slug, *aggregate]
	loads     chan struct{} // one token per load in flight
	every     int           // records folded before a snapshot is written
	c         *Commands
}

// eventLog is what the write side needs of the event log; *events.Store satisfies it.
type eventLog interface {
	Append(ctx context.Context, slug string, expected uint64, commandID string, evs []events.Envelope, opts ...events.AppendOption) (uint64, error)
	Last(ctx context.Context, slug string) (events.Record, bool, error)
	LastHeader(ctx context.Context, slug, name string) (uint64, string, error)
	Range(ctx context.Context, slug string, from, to uint64) ([]events.Record, error)
	Chain(ctx context.Context, slug string, after, last uint64) ([]events.Record, bool, error)
	Slugs(ctx context.Context) ([]string, error)
}

// snapshotStore keeps aggregate snapshots; *events.Snapshots satisfies it.
type snapshotStore interface {
	Get(ctx context.Context, slug string) (events.Snapshot, bool, error)
	Put(ctx context.Context, snap events.Snapshot) error
}

// get returns the current aggregate of slug, as of the log's last record, taking it out of the
// cache: while its caller holds the establishment's lock and changes it, a failure, or a panic,
// anywhere before put leaves nothing half changed in the cache.
func (r *repository) get(ctx context.Context, slug domain.Slug) (*aggregate, error) {
	select {
	case r.loads <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("load %s: %w", slug, ctx.Err())
	}
	defer func() { <-r.loads }()
	cached, _ := r.cache.Get(slug)
	r.cache.Remove(slug)
	a, err := r.load(ctx, slug, cached)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", slug, err)
	}
	if a.folded >= r.every && a.version > 0 {
		r.save(ctx, a)
	}
	return a, nil
}

// put returns an aggregate to the cache once its holder is done with it unchanged, or changed
// and stored. An establishment that does not exist is not kept: asking for unknown slugs does
// not push real ones out.
func (r *repository) put(a *aggregate) {
	if a.est.Created {
		r.cache.Add(a.est.Slug, a)
	}
}

func (r *repository) load(ctx context.Context, slug domain.Slug, cached *aggregate) (*aggregate, error) {
	last, found, err := r.c.log.Last(ctx, string(slug))
	if err != nil {
		return nil, err
	}
	if !found {
		return newAggregate(slug), nil
	}
	if a := cached; a != nil {
		if a.version == last.Sequence && a.commandID == last.CommandID {
			return a, nil
		}
		if a.version > 0 && a.version < last.Sequence {
			if err := r.catchUp(ctx, a, last); err == nil {
				return a, nil
			} else if !errors.Is(err, errSnapshotStale) {
				return nil, err
			}
		}
	}
	if r.snapshots != nil {
		snap, ok, err := r.snapshots.Get(ctx, string(slug))
		if err != nil {
			return nil, err
		}
		if a, usable := fromSnapshot(slug, snap); ok && usable && a.version <= last.Sequence {
			if a.version == last.Sequence {
				if a.commandID == last.CommandID {
					return a, nil
				}
			} else if err := r.catchUp(ctx, a, last); err == nil {
				return a, nil
			} else if !errors.Is(err, errSnapshotStale) {
				return nil, err
			}
			r.c.logger.Debug("snapshot does not match the log, folding the history", "establishment", slug, "sequence", snap.Sequence)
		}
	}
	a := newAggregate(slug)
	recs, err := r.history(ctx, slug, last)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		a.apply(rec, r.c)
	}
	if a.version != last.Sequence || a.commandID != last.CommandID {
		return nil, fmt.Errorf("history ends at sequence %d, the last record is %d", a.version, last.Sequence)
	}
	return a, nil
}

// errSnapshotStale reports a cached or stored state whose last record is not where the log has it.
var errSnapshotStale = errors.New("state does not match the log")

// catchUp folds into a the records after it up to last, after checking that the record a ends
// with is in the log where a says: a state from a snapshot, or cached while the log was rebuilt,
// is then known to be this log's.
func (r *repository) catchUp(ctx context.Context, a *aggregate, last events.Record) error {
	recs, err := r.c.log.Range(ctx, string(a.est.Slug), a.version, last.Sequence-1)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].Sequence != a.version || recs[0].CommandID != a.commandID {
		return errSnapshotStale
	}
	for _, rec := range recs[1:] {
		a.apply(rec, r.c)
	}
	a.apply(last, r.c)
	return nil
}

// history returns every record of slug up to last, its last record: read back from last, each
// through the one it follows, when they all say which that is and are few (events.Store.Chain),
// since one establishment's records lie far apart in a large log and a read under its subject
// would have the server look through every block in between; otherwise read under its subject.
func (r *repository) history(ctx context.Context, slug domain.Slug, last events.Record) ([]events.Record, error) {
	if last.PreviousKnown {
		recs, ok, err := r.c.log.Chain(ctx, string(slug), 0, last.Previous)
		if err != nil {
			return nil, err
		}
		if ok {
			return append(recs, last), nil
		}
	}
	return r.c.log.Range(ctx, string(slug), 1, last.Sequence)
}

// save writes a snapshot of a; a failure costs only a longer load later.
func (r *repository) save(ctx context.Context, a *aggregate) {
	if r.snapshots == nil {
		return
	}
	snap, err := a.snapshot()
	if err == nil {
		err = r.snapshots.Put(context.WithoutCancel(ctx), snap)
	}
	switch {
	case errors.Is(err, events.ErrSnapshotTooLarge):
		// Not cached: the next loads read its history. Trying again at every load would only
		// encode it again.
		r.c.logger.Debug("state too large to snapshot", "establishment", a.est.Slug, "sequence", a.version)
	case err != nil:
		r.c.logger.Warn("write snapshot", "establishment", a.est.Slug, "sequence", a.version, "err", err)
		return
	}
	a.folded = 0
}
