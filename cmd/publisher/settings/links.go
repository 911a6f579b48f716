package settings

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// LinksBucket holds the login links not yet opened, by the hash of their secrets.
const LinksBucket = "SETTINGS_LINKS"

// Bounds of the login links.
const (
	DefaultLinkLifetime = 5 * time.Minute
	MinLinkLifetime     = time.Minute
	MaxLinkLifetime     = time.Hour
	// MaxLinks is how many links made within a LinkLifetime the bucket holds: more are refused
	// (503) until older ones are opened or expire.
	MaxLinks = 10_000
	// MaxName bounds, in characters, the name a link is made for.
	MaxName = 100
)

// errLinkGone is a link that was opened already, expired, or never was: the three look alike.
var errLinkGone = errors.New("settings: login link used or expired")

// link is a login link as its bucket holds it: never its secret.
type link struct {
	ID        string      `json:"id"`
	Slug      domain.Slug `json:"slug"`
	Name      string      `json:"name,omitempty"`
	CreatedBy app.Actor   `json:"created_by"`
	Expires   time.Time   `json:"expires"`
}

// actor is who the commands of a session opened with l are given by.
func (l link) actor() app.Actor {
	name := l.Name
	if name == "" {
		name = "login link " + l.ID
	}
	return app.Actor{ID: l.ID, Name: name}
}

// CreateLink makes a login link to slug's page for the person name (optional), made by the actor
// of ctx, and returns its URL, under base (the admin listener's address as browsers reach it),
// and when it expires. It reports domain.ErrNotFound for an unknown establishment and a
// *domain.FieldError for a bad name.
func (p *Page) CreateLink(ctx context.Context, slug domain.Slug, name string) (string, time.Time, error) {
	name = strings.TrimSpace(name)
	if err := domain.ValidateLine(name, MaxName); err != nil {
		return "", time.Time{}, &domain.FieldError{Field: "name", Reason: err.Error()}
	}
	if _, err := p.cfg.Commands.Get(ctx, slug); err != nil {
		return "", time.Time{}, err
	}
	creator, _ := app.ActorOf(ctx)
	creator = app.Actor{ID: cut(creator.ID, MaxName), Name: cut(creator.Name, MaxName)}
	secret := app.NewSecret()
	key, _ := keyOf(secret)
	l := link{
		ID: app.NewID("lnk"), Slug: slug, Name: name, CreatedBy: creator,
		Expires: p.now().Add(p.cfg.LinkLifetime).UTC().Truncate(time.Second),
	}
	if err := putRecord(ctx, p.links, MaxLinks, key, l); err != nil {
		return "", time.Time{}, err
	}
	p.cfg.Logger.Info("settings login link created", "link", l.ID, "establishment", slug, "by", creator.ID, "expires", l.Expires)
	return strings.TrimRight(p.cfg.BaseURL(), "/") + Path + "open/" + secret, l.Expires, nil
}

// readLink reads the record of the link of secret: the link, its key and its revision;
// errLinkGone when secret names no record.
func (p *Page) readLink(ctx context.Context, secret string) (link, string, uint64, error) {
	key, ok := keyOf(secret)
	if !ok {
		return link{}, "", 0, errLinkGone
	}
	var l link
	rev, found, err := getRecord(ctx, p.links, key, &l)
	switch {
	case err != nil:
		return link{}, "", 0, err
	case !found:
		return link{}, "", 0, errLinkGone
	}
	return l, key, rev, nil
}

// peekLink returns the link of secret, still to be opened; errLinkGone when it was opened,
// expired or never was.
func (p *Page) peekLink(ctx context.Context, secret string) (link, error) {
	l, _, _, err := p.readLink(ctx, secret)
	switch {
	case err != nil:
		return link{}, err
	case !p.now().Before(l.Expires):
		return link{}, errLinkGone
	}
	return l, nil
}

// consumeLink opens the link of secret once: it deletes its record, expecting the revision it
// read, so that of two openings on any processes only one gets the link. Any other is errLinkGone.
func (p *Page) consumeLink(ctx context.Context, secret string) (link, error) {
	l, key, rev, err := p.readLink(ctx, secret)
	if err != nil {
		return link{}, err
	}
	if err := p.links.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
		// Another opening deleted it first, or the bucket did not answer: read it again to tell.
		var again link
		if _, found, rerr := getRecord(ctx, p.links, key, &again); rerr == nil && !found {
			return link{}, errLinkGone
		}
		return link{}, fmt.Errorf("%w: settings: open login link %s: %w", app.ErrUnavailable, l.ID, err)
	}
	if !p.now().Before(l.Expires) {
		return link{}, errLinkGone
	}
	return l, nil
}

// cut returns s cut to at most n characters: a record keeps its fields within maxRecordBytes.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
