package app

import (
	"context"
	"errors"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// KeyResult is the outcome of a command that may issue an API key. The key is shown once: it is
// empty when the command issued none, or when it was a duplicate of one already applied.
type KeyResult struct {
	Result
	APIKey domain.APIKey
}

// Import brings the establishment to the content of snap, creating it if needed. The result
// holds a new API key when the import turned the public API on.
func (c *Commands) Import(ctx context.Context, req Request, snap domain.EstablishmentInput) (KeyResult, error) {
	if snap.Slug == "" {
		snap.Slug = string(req.Slug)
	}
	if err := c.resolveFiles(ctx, &snap); err != nil {
		return KeyResult{}, err
	}
	var key domain.APIKey
	res, err := c.execute(ctx, req.as(ActionImported, ""), userCommand, func(e *domain.Establishment) ([]domain.Event, error) {
		out, err := e.Import(snap, newAPIKey())
		key = out.APIKey
		return out.Events, err
	})
	return keyResult(res, key), err
}

// keyResult shows key unless the command was a duplicate.
func keyResult(res Result, key domain.APIKey) KeyResult {
	if res.Duplicate {
		key = ""
	}
	return KeyResult{Result: res, APIKey: key}
}

// Activate moves a draft establishment to active.
func (c *Commands) Activate(ctx context.Context, req Request) (Result, error) {
	return c.execute(ctx, req.as(domain.TypeActivated, ""), userCommand, (*domain.Establishment).Activate)
}

// EnableAPI turns the public API on and issues its key.
func (c *Commands) EnableAPI(ctx context.Context, req Request) (KeyResult, error) {
	key := newAPIKey()
	res, err := c.execute(ctx, req.as(domain.TypePublicAPIEnabled, ""), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.EnableAPI(key) })
	return keyResult(res, key), err
}

// DisableAPI turns the public API off; its key stops working.
func (c *Commands) DisableAPI(ctx context.Context, req Request) (Result, error) {
	return c.execute(ctx, req.as(domain.TypePublicAPIDisabled, ""), userCommand, (*domain.Establishment).DisableAPI)
}

// RegenerateKey issues a new API key; the previous one stops working.
func (c *Commands) RegenerateKey(ctx context.Context, req Request) (KeyResult, error) {
	key := newAPIKey()
	res, err := c.execute(ctx, req.as(domain.TypeAPIKeyRegenerated, ""), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.RegenerateAPIKey(key) })
	return keyResult(res, key), err
}

// SetMenuRedirect sets menu_redirect_enabled.
func (c *Commands) SetMenuRedirect(ctx context.Context, req Request, enabled bool) (Result, error) {
	return c.execute(ctx, req.as(domain.TypeMenuRedirectChanged, onOff(enabled)), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(enabled) })
}

// PublishVersion publishes version v of menu type typ, or replaces the version with its id.
func (c *Commands) PublishVersion(ctx context.Context, req Request, typ domain.Slug, v domain.VersionInput) (Result, error) {
	if err := c.resolveVersionFiles(ctx, "", &v); err != nil {
		return Result{}, err
	}
	return c.execute(ctx, req.as(domain.TypeMenuVersionPublished, string(typ)+"/"+v.ID), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.PublishMenuVersion(typ, v) })
}

// WithdrawVersion removes version id of menu type typ.
func (c *Commands) WithdrawVersion(ctx context.Context, req Request, typ, id domain.Slug) (Result, error) {
	return c.execute(ctx, req.as(domain.TypeMenuVersionWithdrawn, string(typ)+"/"+string(id)), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.WithdrawMenuVersion(typ, id) })
}

// DayResult is the outcome of StartDay and StartDayAt.
type DayResult struct {
	Result
	// Calendar is the establishment's calendar after the command; Result.Version is the record it
	// is as of.
	Calendar Calendar
	// Direct says the day was started on the calendar the caller gave, without loading the
	// establishment.
	Direct bool
}

// StartDay records the establishment's local date, per the clock, when its public documents
// depend on the date and the date moved since it last recorded one: it appends one day-started
// event, or nothing. Its content is not checked: the calendar moves whatever it holds.
func (c *Commands) StartDay(ctx context.Context, slug domain.Slug) (DayResult, error) {
	var cal Calendar
	res, err := c.execute(ctx, Request{Slug: slug}, clockCommand, func(e *domain.Establishment) ([]domain.Event, error) {
		if !e.Created {
			return nil, domain.ErrNotFound
		}
		cal = CalendarOf(e)
		if !cal.Dependent {
			return nil, nil
		}
		evs, err := e.StartDay(c.clock(e.Location()))
		if len(evs) > 0 {
			cal.Today = evs[0].(domain.DayStarted).Date
		}
		return evs, err
	})
	return DayResult{Result: res, Calendar: cal}, err
}

// StartDayAt starts the day of slug knowing its calendar cal as of its record seq, as the clock's
// index holds it. While seq is still the establishment's last record, cal is exactly what the
// establishment says, so the decision is StartDay's own: the day-started event is appended on the
// expectation of seq, without loading the establishment (one request). When a record came after
// seq, the append is refused and StartDay decides on the loaded state instead.
func (c *Commands) StartDayAt(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, error) {
	if seq > 0 && cal.Dependent {
		res, done, err := c.startDayDirect(ctx, slug, cal, seq)
		if done || err != nil {
			return res, err
		}
	}
	return c.StartDay(ctx, slug)
}

// startDayDirect appends the day-started event of slug on the expectation of seq. done is false
// when the log moved past seq: the caller loads the establishment and decides again.
func (c *Commands) startDayDirect(ctx context.Context, slug domain.Slug, cal Calendar, seq uint64) (DayResult, bool, error) {
	e := domain.Establishment{TimeZone: cal.Zone}
	date := c.clock(e.Location())
	if !cal.Today.IsZero() && !cal.Today.Before(date) {
		return DayResult{Result: Result{Slug: slug, Version: seq}, Calendar: cal, Direct: true}, true, nil
	}
	day := domain.DayStarted{Date: date}
	envs, err := c.envelopes(slug, []domain.Event{day})
	if err != nil {
		return DayResult{}, false, err
	}
	after := cal
	after.Today = date
	id := NewID("cmd")
	defer c.locks.lock(slug)()
	v, err := c.log.Append(ctx, string(slug), seq, id, envs, events.WithHeader(CalendarHeader, after.String()))
	switch {
	case errors.Is(err, events.ErrConflict):
		return DayResult{}, false, nil
	case err != nil:
		return DayResult{}, false, unavailable(err)
	}
	// A cached state at seq follows; any other is stale now.
	if a, ok := c.repo.cache.Peek(slug); ok {
		c.repo.cache.Remove(slug)
		if a.version == seq {
			a.est.Apply(day)
			a.version, a.commandID = v, id
			a.folded++
			c.repo.put(a)
		}
	}
	return DayResult{Result: Result{Slug: slug, Version: v, Events: 1}, Calendar: after, Direct: true}, true, nil
}
