package readapi

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// apply handles one watcher delivery to v: a nil entry marks the end of the initial values. served
// says v is the view served, whose changes wake waiters.
func (m *Mirror) apply(v *view, d delivery, served bool) {
	if d.kve == nil {
		if !v.caughtUp {
			m.catchUp(v, served)
		}
		return
	}
	rev := d.kve.Revision()
	m.handle(v, d)
	if !v.caughtUp {
		// Made visible, with every initial value, by catchUp.
		v.pendingRev = max(v.pendingRev, rev)
		return
	}
	v.applied.Store(rev)
	if served {
		m.notify()
	}
}

// catchUp publishes the initial values of v at once; the view served first marks the mirror
// ready.
func (m *Mirror) catchUp(v *view, served bool) {
	v.caughtUp = true
	var shards [indexShards]map[string]*slot
	for i := range shards {
		shards[i] = make(map[string]*slot, len(v.pending)/indexShards)
	}
	for slug, s := range v.pending {
		shards[shardOf(slug)][slug] = s
	}
	for i := range shards {
		v.index[i].Store(&shards[i])
	}
	established := len(v.pending)
	v.pending = nil
	v.applied.Store(v.pendingRev)
	if served {
		select {
		case <-m.ready:
		default:
			close(m.ready)
		}
		m.notify()
	}
	m.logger.Info("bundle mirror caught up", "establishments", established, "bucket", v.kv.Bucket())
}

func (m *Mirror) handle(v *view, d delivery) {
	kve, slug := d.kve, d.slug
	rev := kve.Revision()
	if slug == "" {
		m.logger.Warn("skip bundle under an invalid key", "key", kve.Key(), "bucket_revision", rev)
		return
	}
	if d.ahead {
		m.handleAhead(v, d)
		return
	}
	s := v.slot(slug)
	if kve.Operation() != jetstream.KeyValuePut {
		if s != nil && s.current.Load() != nil {
			v.swap(s, nil)
			m.logger.Info("bundle removed", "slug", slug, "bucket_revision", rev)
		}
		return
	}
	e, err := d.e, d.err
	if err != nil {
		m.logger.Warn("skip invalid bundle", "slug", slug, "bucket_revision", rev, "err", err)
		return
	}
	if s == nil {
		s = &slot{held: e.revision}
		v.swap(s, e)
		v.addSlot(slug, s)
		return
	}
	if e.revision < s.held {
		m.logger.Warn("skip bundle older than the one held", "slug", slug,
			"content_revision", e.revision, "held", s.held, "bucket_revision", rev)
		return
	}
	s.held = e.revision
	v.swap(s, e)
}

// handleAhead applies the bundle of a day ahead, or its removal. It is held beside the current
// entry, which it replaces for readers from the day's start (see Mirror.lookup).
func (m *Mirror) handleAhead(v *view, d delivery) {
	kve, slug := d.kve, d.slug
	s := v.slot(slug)
	if kve.Operation() != jetstream.KeyValuePut {
		if s != nil {
			v.swapAhead(s, nil)
		}
		return
	}
	e, err := d.e, d.err
	if err == nil && (e.starts <= 0 || e.revision <= e.base) {
		err = fmt.Errorf("%w: a day ahead must start at an instant and be of a revision above the one it follows", errInvalidBundle)
	}
	if err != nil {
		m.logger.Warn("skip invalid bundle of a day ahead", "slug", slug, "bucket_revision", kve.Revision(), "err", err)
		return
	}
	if s == nil {
		s = &slot{}
		v.addSlot(slug, s)
	}
	v.swapAhead(s, e)
}
