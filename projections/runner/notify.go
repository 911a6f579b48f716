package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
)

// Notifier is told about every rise of an establishment's content_revision, after the bundle
// is stored. A failed Changed is retried until it succeeds or the projector stops, so Changed
// must tolerate being called again with the same change.
type Notifier interface {
	Changed(ctx context.Context, c Change) error
}

// Announcements tells the last revision a Notifier announced of an establishment (0 for none it
// still knows of). With Config.Announcements, the projector announces at start a stored revision
// whose announcement was lost, in a crash between storing its bundle and telling the notifier:
// the receivers of changes never miss the latest revision.
type Announcements interface {
	Announced(ctx context.Context, slug string) (int64, error)
}

// AllAnnouncements tells, in one read, the last revision a Notifier announced of every
// establishment it still knows of (those it does not are at 0): with Config.AllAnnouncements, a
// replay of the whole log checks the announcements of them all, which one question each would
// make last.
type AllAnnouncements interface {
	AllAnnounced(ctx context.Context, fn func(slug string, revision int64)) error
}

// AnnouncedNotifier is a Notifier that tells what it announced, as AnnounceSwitch needs.
type AnnouncedNotifier interface {
	Notifier
	Announcements
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
	n := p.cfg.Announcements
	if n == nil || t.stored == nil || t.stored.Status() != dockey.StatusActive || p.cfg.Now().Sub(t.changed) > ReannounceWithin {
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
