package events

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStalled ends a Follow whose consumer delivered nothing for followStallAfter while the log
// held records after the last it delivered: the caller follows again from the record after it.
//
// A consumer lost with a cluster node is made again by the client, which notices the missing
// heartbeats within seconds; but while the cluster elects new leaders, its attempts to make the
// consumer are refused, and it waits between them 1, 2, 4 then 8 s: a follower could stand still
// for ten seconds or more after the cluster is whole again. A new follow makes its consumer at
// once.
var ErrStalled = errors.New("the consumer delivers nothing while records wait")

// ErrNoConsumer is a read whose consumer the server would not make: after ErrStalled, while the
// cluster is still electing its leaders, say.
var ErrNoConsumer = errors.New("create consumer")

const (
	// followStallAfter is how long a follow may receive nothing, while records wait and it is
	// not busy with one, before it ends with ErrStalled.
	followStallAfter = 3 * time.Second
	// followStallCheck is how often a follow checks whether it stalled.
	followStallCheck = time.Second
)

// stallWatch tells whether a follow has stalled: the sequence of the last message it received,
// and whether its function is busy with one, which a slow function must not be taken for.
type stallWatch struct {
	received atomic.Uint64
	busy     atomic.Bool
}

// receive is called with each message's sequence before the follow's function, and done after.
func (w *stallWatch) receive(seq uint64) (done func()) {
	w.received.Store(seq)
	w.busy.Store(true)
	return func() { w.busy.Store(false) }
}

// run checks every followStallCheck until ctx ends, and calls stalled once the follow has
// received nothing for followStallAfter (three times that before its first message), not busy,
// while stream holds a message after the last it received, stored at least followStallAfter ago. The stream is asked only then, and
// so once per followStallAfter while the follow is idle: one direct get of the first message
// after that one, which the server answers from the block that would hold it. When it cannot
// answer, nothing is decided.
func (w *stallWatch) run(ctx context.Context, stream jetstream.Stream, stalled func()) {
	t := time.NewTicker(followStallCheck)
	defer t.Stop()
	// A new consumer is given longer to deliver its first message: a large log on a busy node
	// may take seconds to start reading.
	last, since := w.received.Load(), time.Now().Add(2*followStallAfter)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if seq := w.received.Load(); seq != last || w.busy.Load() {
				last, since = seq, now
				continue
			}
			if now.Sub(since) < followStallAfter {
				continue
			}
			msg, err := stream.GetMsg(ctx, last+1, jetstream.WithGetMsgSubject(">"))
			if err != nil || now.Sub(msg.Time) < followStallAfter {
				// Nothing waits (idle, not stalled), or not for long enough (a write of a moment
				// ago, on its way), or unknown: asked again later.
				since = now
				continue
			}
			if w.received.Load() != last || w.busy.Load() {
				continue // it came meanwhile
			}
			stalled()
			return
		}
	}
}
