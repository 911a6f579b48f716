package app

import (
	"context"

	"github.com/opencarte/publisher/domain"
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
