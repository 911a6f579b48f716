package changes

import (
	"context"
	"time"

	"github.com/opencarte/publisher/events"
)

// Long polls wake when the signals' stream grows, not when the subscription sees a signal: it
// may see one before the stream stores it (a cluster stores it once a majority of replicas has
// it), and a read at once would find nothing, then wait for the next signal, maybe a minute. A
// signal the stream refuses as sent twice wakes nobody.

// Bounds of the looks that follow a signal seen: the first at once, the next after lookPause,
// each next one twice as late, lookTries in all (about 2.5 s).
const (
	lookPause = 10 * time.Millisecond
	lookTries = 9
)

// watch wakes the long polls each time the last sequence of the signals' stream moved since it
// last looked; a signal seen asks it to look. It is the Feed's one goroutine, whatever the number
// of waiting reads, and looks one at a time: a burst of signals costs a few looks, not one each.
func (f *Feed) watch(ctx context.Context) {
	defer close(f.closed)
	known, _ := f.cfg.Signals.LastSequence(ctx)
	for {
		select {
		case <-f.nudge:
		case <-ctx.Done():
			return
		}
		pause := lookPause
		for range lookTries {
			// A stream made again starts over: its last sequence moves back, and that is news too.
			if last, err := f.cfg.Signals.LastSequence(ctx); err == nil && last != known {
				known = last
				f.wake()
				break
			}
			if events.Sleep(ctx, pause) != nil {
				return
			}
			pause *= 2
		}
	}
}

// wake wakes every long poll.
func (f *Feed) wake() {
	f.mu.Lock()
	close(f.new)
	f.new = make(chan struct{})
	f.mu.Unlock()
}

// next returns the channel the next growth of the stream closes.
func (f *Feed) next() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.new
}
