package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
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
	Announced(ctx context.Context, slug string) (Announcement, error)
}

// AllAnnouncements tells, in one read, the last revision a Notifier announced of every
// establishment it still knows of (those it does not are at 0): with Config.AllAnnouncements, a
// replay of the whole log checks the announcements of them all, which one question each would
// make last.
type AllAnnouncements interface {
	AllAnnounced(ctx context.Context, fn func(slug string, a Announcement)) error
}

// AnnouncedNotifier is a Notifier that tells what it announced, as AnnounceSwitch needs.
type AnnouncedNotifier interface {
	Notifier
	Announcements
}

// ReannounceWithin bounds how old a change may be for the projector to check at start that it
// was announced: a notifier forgets older announcements (the change signals stream keeps them
// for events.SignalMaxAge), and an establishment unchanged for that long must not be announced
// again at every start. Config.SignalRetention sets another retention; see reannounceWindow.
const ReannounceWithin = events.SignalMaxAge - 24*time.Hour

// reannounceWindow is ReannounceWithin for a notifier that keeps announcements for retention (0:
// events.SignalMaxAge): a day less, or half of it when it is under two days, so that a start
// never asks about an announcement the notifier may have dropped already.
func reannounceWindow(retention time.Duration) time.Duration {
	switch {
	case retention <= 0:
		return ReannounceWithin
	case retention < 48*time.Hour:
		return retention / 2
	}
	return retention - 24*time.Hour
}

// Change is a rise of one establishment's content_revision, or a transition: the establishment
// started or stopped being served without one.
type Change struct {
	Slug     string
	Revision int64
	// Resources lists the resources whose bytes changed: "establishment", "hours", "menus", then
	// "menus/<menu_type_slug>" by slug for each menu detail that changed, appeared or disappeared;
	// for a transition, every resource the bundle had or has.
	Resources []string
	// Unserved is true when the read API does not serve the establishment at this revision.
	Unserved bool
	// Transition is "", projections.TransitionUnserved or projections.TransitionServed.
	Transition string
	// Stored is the sequence, in the stream of the bucket of bundles, of the write of this state;
	// 0 when it is not of the live bucket (a rebuild's announcements).
	Stored uint64
}

// Announcement is what a Notifier last announced of an establishment: its revision (0 for none it
// still knows of) and whether it was unserved then.
type Announcement struct {
	Revision int64
	Unserved bool
}

// unknownAnnouncement stands for an announcement the notifier is still to be asked.
var unknownAnnouncement = Announcement{Revision: -1}

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

// reannounce announces the stored bundle of t again when it changed within its window and
// the notifier's last announcement for it, last (unknownAnnouncement asks the notifier), is
// older: a public bundle of a higher revision with every resource; a bundle served, or not, at
// the announced revision while the announcement said otherwise, as a transition.
func (p *Projector) reannounce(ctx context.Context, t *tracked, last Announcement) error {
	n := p.cfg.Announcements
	if n == nil || t.stored == nil || p.cfg.Now().Sub(t.changed) > reannounceWindow(p.cfg.SignalRetention) {
		return nil // nothing to announce
	}
	s := t.stored
	slug := string(t.agg.Slug)
	if last.Revision < 0 {
		err := p.retry(ctx, "read the last announcement of "+slug, func() (err error) {
			last, err = n.Announced(ctx, slug)
			if errors.Is(err, events.ErrInvalidSignal) {
				// An announcement that cannot be read is as none: the stored revision is announced.
				last, err = Announcement{}, nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	c := Change{Slug: slug, Revision: s.Revision(), Resources: s.Resources(), Unserved: !s.Served()}
	switch {
	case s.Status() == dockey.StatusActive && last.Revision < s.Revision():
	case last.Revision == 0 || last.Revision > s.Revision() || last.Unserved == c.Unserved:
		return nil
	case c.Unserved:
		c.Transition = projections.TransitionUnserved
		if len(c.Resources) == 0 {
			c.Resources = []string{projections.ResourceEstablishment, projections.ResourceHours, projections.ResourceMenus}
		}
	default:
		c.Transition = projections.TransitionServed
	}
	p.logger.Info("announcing a stored revision whose announcement was lost", "slug", slug, "revision", s.Revision(),
		"announced", last.Revision, "transition", c.Transition)
	return p.notify(ctx, c)
}
