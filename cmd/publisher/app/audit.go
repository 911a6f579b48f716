package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// The audit: every accepted command given with an actor (WithActor) that changed something is
// recorded with who gave it; so are a transport's own commands, and those on no one establishment,
// which it records with Record. Commands on the log carry the actor in their record's headers
// (ActorIDHeader, ActorNameHeader), the log staying the one truth; every such command, and those
// on webhook endpoints, which are not in the log, also leaves an entry on the establishment's
// audit trail, which Audit reads newest first. The entry is sent without waiting for the trail to
// store it (a command waits for one store, the log); one the trail failed to store is logged
// (see Config.Audit), and does not undo the command.

// Headers of a record that name the actor of its command.
const (
	ActorIDHeader   = "Actor-Id"
	ActorNameHeader = "Actor-Name"
)

// maxActorText bounds, in bytes, an actor's id and name as records and entries keep them: they
// fit the room a record keeps for its headers whatever a transport let through.
const maxActorText = 200

// Actions of the audit that are no event type of the domain's.
const (
	ActionImported         = "establishment.imported"
	ActionAssetAdded       = "menu_asset.added"
	ActionSecretRotated    = "webhook_endpoint.secret_rotated"
	ActionEndpointEnabled  = "webhook_endpoint.enabled"
	ActionEndpointPinged   = "webhook_endpoint.pinged"
	ActionLoginLinkCreated = "login_link.created"
)

// platformTrail is the trail of the commands on no one establishment: not a slug, so no
// establishment's.
const platformTrail = "_platform"

// Bounds of an audit page.
const (
	DefaultAuditPage = 50
	MaxAuditPage     = 200
)

// auditTrail keeps the audit entries of each establishment; *events.Audit satisfies it.
type auditTrail interface {
	Append(ctx context.Context, slug, id string, entry []byte) error
	Read(ctx context.Context, slug string, before uint64, limit int) ([]events.AuditEntry, uint64, error)
}

// AuditEntry is one accepted command as the audit shows it: when, who, what and on what.
type AuditEntry struct {
	At    time.Time `json:"at"`
	Actor Actor     `json:"credential"`
	// Action names the command, as an event type would: "public_api.enabled",
	// "webhook_endpoint.registered".
	Action string `json:"action"`
	// Detail says on what or to what, when the action alone does not: a menu version, an
	// endpoint's id, a redirect's new setting.
	Detail string `json:"detail,omitempty"`
	// Version is the record the command appended to the log; 0 for commands outside the log.
	Version uint64 `json:"version,omitempty"`
}

// AuditPage is one page of an establishment's audit, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// Next is the before of the next, older page; empty on the last one.
	Next string `json:"next,omitempty"`
}

// as returns req, named in the audit by action and detail.
func (r Request) as(action, detail string) Request {
	r.action, r.detail = action, detail
	return r
}

// actorHeaders returns the append options that name the actor of ctx on a record, if it has one.
func actorHeaders(ctx context.Context) []events.AppendOption {
	a, ok := ActorOf(ctx)
	if !ok {
		return nil
	}
	return []events.AppendOption{events.WithHeader(ActorIDHeader, headerText(a.ID)), events.WithHeader(ActorNameHeader, headerText(a.Name))}
}

// headerText returns s as one line of visible text of at most maxActorText bytes: control
// characters become spaces, and a longer text is cut at a character's start.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxActorText {
		s = strings.ToValidUTF8(s[:maxActorText], "")
	}
	return s
}

// audit records, when ctx names an actor, that it gave the command req named with as; version is
// the record it appended, 0 for a command outside the log. id names the command on the trail:
// one stored twice within the trail's duplicates window is stored once.
func (c *Commands) audit(ctx context.Context, req Request, id string, version uint64) {
	actor, ok := ActorOf(ctx)
	if !ok || c.trail == nil || req.action == "" {
		return
	}
	actor = Actor{ID: headerText(actor.ID), Name: headerText(actor.Name)}
	trail := string(req.Slug)
	if trail == "" {
		trail = platformTrail
	}
	entry, err := json.Marshal(AuditEntry{At: c.now().UTC(), Actor: actor, Action: req.action, Detail: req.detail, Version: version})
	if err == nil {
		// The command is done: its entry is sent even when its client has gone.
		err = c.trail.Append(context.WithoutCancel(ctx), trail, id, entry)
	}
	if err != nil {
		c.logger.Warn("audit entry not stored", "trail", trail, "action", req.action, "err", err)
	}
}

// Record records in the audit that the actor of ctx gave a command this package does not run: a
// transport's own, such as a login link created, or one on no establishment (slug ""), such as a
// token created or a broker destination paused. Audit lists the first, PlatformAudit the others.
func (c *Commands) Record(ctx context.Context, slug domain.Slug, action, detail string) {
	c.audit(ctx, Request{Slug: slug}.as(action, detail), NewID("cmd"), 0)
}

// Audit returns a page of at most limit (0: DefaultAuditPage, at most MaxAuditPage) of the
// commands given on slug with an actor, newest first, from before (the Next of the previous page;
// "" for the newest). It reports domain.ErrNotFound for an unknown establishment.
func (c *Commands) Audit(ctx context.Context, slug domain.Slug, before string, limit int) (AuditPage, error) {
	from, limit, err := auditPage(before, limit)
	if err != nil {
		return AuditPage{}, err
	}
	if _, err := c.state(ctx, slug); err != nil {
		return AuditPage{}, err
	}
	return c.readTrail(ctx, string(slug), from, limit)
}

// PlatformAudit is Audit of the commands on no one establishment (see Record).
func (c *Commands) PlatformAudit(ctx context.Context, before string, limit int) (AuditPage, error) {
	from, limit, err := auditPage(before, limit)
	if err != nil {
		return AuditPage{}, err
	}
	return c.readTrail(ctx, platformTrail, from, limit)
}

// auditPage checks the cursor and the size of a page of the audit, and settles the size's default.
func auditPage(before string, limit int) (uint64, int, error) {
	if limit == 0 {
		limit = DefaultAuditPage
	}
	if limit < 1 || limit > MaxAuditPage {
		return 0, 0, &domain.FieldError{Field: "limit", Reason: fmt.Sprintf("want 1 to %d", MaxAuditPage)}
	}
	if before == "" {
		return 0, limit, nil
	}
	n, err := strconv.ParseUint(before, 10, 64)
	if err != nil || n == 0 {
		return 0, 0, &Refusal{Kind: KindMalformed, Err: fmt.Errorf("before: %q is not a cursor this audit gave", before)}
	}
	return n, limit, nil
}

// readTrail reads a page of the trail.
func (c *Commands) readTrail(ctx context.Context, trail string, from uint64, limit int) (AuditPage, error) {
	page := AuditPage{Entries: []AuditEntry{}}
	if c.trail == nil {
		return page, nil
	}
	stored, next, err := c.trail.Read(ctx, trail, from, limit)
	if err != nil {
		return AuditPage{}, unavailable(err)
	}
	for _, s := range stored {
		var e AuditEntry
		if err := json.Unmarshal(s.Data, &e); err != nil {
			c.logger.Warn("audit entry unreadable", "trail", trail, "sequence", s.Sequence, "err", err)
			continue
		}
		page.Entries = append(page.Entries, e)
	}
	if next != 0 {
		page.Next = strconv.FormatUint(next, 10)
	}
	return page, nil
}

// onOff is a switch's setting as the audit names it.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
