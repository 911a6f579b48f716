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

// Notifier is told about every rise of an establishment's content_revision, and every time it
// starts or stops being served without one (a transition), after the bundle is stored. A failed
// Changed is retried until it succeeds or the projector stops, so Changed must tolerate being
// called again with the same change.
type Notifier interface {
	Changed(ctx context.Context, c Change) error
}

// Announcements tells the last announcement a Notifier made of an establishment: its revision (0
// for none it still knows of) and whether it said unserved. With Config.Announcements, the
// projector announces at start a stored revision, or transition, whose announcement was lost in
// a crash between storing its bundle and telling the notifier: the receivers of changes never
// miss the latest revision, nor whether it is served.
type Announcements interface {
	Announced(ctx context.Context, slug string) (Announcement, error)
}

// AllAnnouncements tells, in one read, the last announcement a Notifier made of every
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
	// "menus/<menu_type_slug>" by slug for each menu detail that changed, appeared or disappeared,
	// then "jsonld";
	// for a transition, every resource the bundle had or has, and so for a rise that also started or
	// stopped serving the establishment.
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

// reannounce announces the stored bundle of t again when it changed within its window and the
// notifier's last announcement for it, last (unknownAnnouncement asks the notifier), does not say
// it (see lost). The change carries the bucket's sequence of the bundle's write, as the
// announcement that was lost would have: a reader of the changes feed tells by it that a first
// sync already gave this state. stored is that sequence when known; 0 reads it from the bucket,
// which the replay of a whole log, announcing again what a lost stream of signals forgot, does
// not need to.
func (p *Projector) reannounce(ctx context.Context, t *tracked, last Announcement, stored uint64) error {
	n := p.cfg.Announcements
	if n == nil || t.stored == nil || p.cfg.Now().Sub(t.changed) > reannounceWindow(p.cfg.SignalRetention) {
		return nil // nothing to announce
	}
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
	c, ok := lost(slug, t.stored, last)
	if !ok {
		return nil
	}
	c.Stored = stored
	if c.Stored == 0 {
		err := p.retry(ctx, "read the bucket's sequence of the bundle of "+slug, func() (err error) {
			c.Stored, err = p.cfg.KV.sequence(ctx, dockey.Key(slug))
			return err
		})
		if err != nil {
			return err
		}
	}
	p.logger.Info("announcing a stored revision whose announcement was lost", "slug", slug, "revision", c.Revision,
		"announced", last.Revision, "transition", c.Transition)
	return p.notify(ctx, c)
}

// lost returns the change that announces s, the summary of the stored bundle of slug, when last,
// the notifier's last announcement of it, does not say what s is, and reports whether there is
// one: an active bundle of a higher revision is a change of content with every resource; a bundle
// served, or not, while the last announcement of a revision not above its own said otherwise is a
// transition. A draft's transition lists the resources its bundle keeps (establishment, hours,
// menus, jsonld): the menus it had are no longer known. Nothing is announced of a bundle never announced
// that is not active: no one could read it.
func lost(slug string, s *projections.BundleSummary, last Announcement) (Change, bool) {
	c := Change{Slug: slug, Revision: s.Revision(), Resources: s.Resources(), Unserved: !s.Served()}
	switch {
	case s.Status() == dockey.StatusActive && last.Revision < s.Revision():
		return c, true
	case last.Revision == 0 || last.Revision > s.Revision() || last.Unserved == c.Unserved:
		return Change{}, false
	case c.Unserved:
		c.Transition = projections.TransitionUnserved
		if len(c.Resources) == 0 {
			c.Resources = []string{projections.ResourceEstablishment, projections.ResourceHours, projections.ResourceMenus, projections.ResourceJSONLD}
		}
	default:
		c.Transition = projections.TransitionServed
	}
	return c, true
}
