package telemetry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lagCheckEvery is how often a read node compares its mirror with the documents bucket.
const lagCheckEvery = time.Second

// stallAfter is how long a mirror behind its bucket may apply nothing before Lag calls Stalled.
const stallAfter = 3 * time.Second

// Lag follows how long the read API's mirror has been behind the documents bucket: every second
// it asks the bucket's stream for its first write after the last one the mirror applied, which
// follows every key (direct gets, never on a read's path). A get from a sequence, unlike the
// last write under a wildcard, costs the server no walk over the bucket's keys; and the stream
// answers it itself, where a request to the JetStream API (the stream's state, say) races in the
// server with JetStream being started again after a full disk, as the race detector found.
//
// The write just after the one applied is asked for first, by its sequence alone: the server
// looks in the one block that would hold it, or sees the stream ends before it. Only when it is
// gone (its key written again since, or deleted) is the first write after it asked for under the
// bucket's subjects, which the server looks for through the blocks that follow, loading each:
// 2 to 20 ms a check while a day change rewrites 20,000 establishments' bundles.
type Lag struct {
	js     jetstream.JetStream
	mirror lagging
	bucket string           // the generation of the bucket stream is of
	stream jetstream.Stream // the bucket's stream
	since  atomic.Int64     // Unix ns since which the mirror is behind; 0 when it is not

	// Stalled, when set, is called when the mirror has been behind the bucket for stallAfter
	// without applying anything, and again every three times that while it lasts: the consumer
	// of its watch may have gone with a NATS server while the connection stayed up, which the
	// client notices only once it has missed that consumer's heartbeats, 10 to 20 s later. Set
	// before Run.
	Stalled func()

	progress uint64    // Applied when it last moved, or the mirror was last seen not behind
	still    time.Time // since when the mirror, behind, has not moved from progress
}

// lagging is the read API's mirror as Lag compares it with its bucket.
type lagging interface {
	Bucket() jetstream.KeyValue // the generation of the bucket served
	Applied() uint64            // the revision up to which every write is applied
}

// NewLag returns the lag of mirror behind its bucket, on js; Run follows it.
func NewLag(ctx context.Context, js jetstream.JetStream, mirror lagging) (*Lag, error) {
	l := &Lag{js: js, mirror: mirror}
	if err := l.bind(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// bind binds to the stream of the generation of the bucket the mirror serves.
func (l *Lag) bind(ctx context.Context) error {
	bucket := l.mirror.Bucket().Bucket()
	if bucket == l.bucket {
		return nil
	}
	stream, err := l.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return err
	}
	l.bucket, l.stream = bucket, stream
	return nil
}

// Behind says how long the mirror has been behind the bucket, 0 when it is not, or when NATS
// cannot say (the node then serves what it holds, as it would anyway).
func (l *Lag) Behind() time.Duration {
	since := l.since.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

// Run compares the mirror with its bucket every lagCheckEvery until ctx ends.
func (l *Lag) Run(ctx context.Context) error {
	t := time.NewTicker(lagCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, lagCheckEvery)
		var msg *jetstream.RawStreamMsg
		applied := l.mirror.Applied()
		err := l.bind(rctx)
		if err == nil {
			msg, err = l.firstAfter(rctx, applied)
		}
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			l.since.Store(0) // nothing written since
			l.still = time.Time{}
		case err != nil:
			// Unknown: the last state stands.
		case l.mirror.Applied() >= msg.Sequence:
			l.since.Store(0) // applied meanwhile
			l.still = time.Time{}
		default:
			now := time.Now()
			l.since.CompareAndSwap(0, now.UnixNano())
			if l.stalled(applied, now) && l.Stalled != nil {
				l.Stalled()
			}
		}
	}
}

// stalled reports whether the mirror, found behind at now with applied, has applied nothing for
// stallAfter; it then starts counting again.
func (l *Lag) stalled(applied uint64, now time.Time) bool {
	if l.still.IsZero() || applied != l.progress {
		l.progress, l.still = applied, now
		return false
	}
	if now.Sub(l.still) < stallAfter {
		return false
	}
	// The watch started again is given longer to deliver its first value.
	l.still = now.Add(2 * stallAfter)
	return true
}

// firstAfter returns the first write to the bucket after sequence applied, under any key.
func (l *Lag) firstAfter(ctx context.Context, applied uint64) (*jetstream.RawStreamMsg, error) {
	msg, err := l.stream.GetMsg(ctx, applied+1)
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return msg, err
	}
	return l.stream.GetMsg(ctx, applied+1, jetstream.WithGetMsgSubject("$KV."+l.bucket+".>"))
}
