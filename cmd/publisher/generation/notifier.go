package generation

import (
	"context"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// SignalNotifier publishes the projector's revision rises and served transitions as change
// signals, which the webhooks deliver and the changes feed reads: a projector's and a rebuild's
// announcements alike.
type SignalNotifier struct {
	Signals *events.Signals
	// Count, unless nil, is called for each change announced (a metric).
	Count func()
}

var _ interface {
	runner.AnnouncedNotifier
	runner.AllAnnouncements
} = SignalNotifier{}

// Changed publishes the change signal of c, stamped with the time now.
func (n SignalNotifier) Changed(ctx context.Context, c runner.Change) error {
	if n.Count != nil {
		n.Count()
	}
	return n.Signals.Publish(ctx, events.Signal{
		Establishment: c.Slug, Revision: c.Revision, Resources: c.Resources, Time: time.Now().UTC(),
		Unserved: c.Unserved, Transition: c.Transition, Stored: c.Stored,
	})
}

// Announced returns the revision of the last signal of slug still in the stream, and whether it
// said unserved.
func (n SignalNotifier) Announced(ctx context.Context, slug string) (runner.Announcement, error) {
	s, err := n.Signals.Last(ctx, slug)
	return runner.Announcement{Revision: s.Revision, Unserved: s.Unserved}, err
}

// AllAnnounced passes fn the last signal of every establishment with one still in the stream.
func (n SignalNotifier) AllAnnounced(ctx context.Context, fn func(slug string, a runner.Announcement)) error {
	return n.Signals.Lasts(ctx, func(s events.Signal) {
		fn(s.Establishment, runner.Announcement{Revision: s.Revision, Unserved: s.Unserved})
	})
}
