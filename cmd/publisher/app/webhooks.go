package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencarte/publisher/domain"
)

// webhookRegistry keeps webhook endpoints with their signing secrets, outside the event log.
type webhookRegistry interface {
	Register(ctx context.Context, establishment, id, url, secret string) error
	Remove(ctx context.Context, establishment, id string) error
	RotateSecret(ctx context.Context, establishment, id, newSecret string, grace time.Duration) error
}

// MaxRotationGrace bounds how long a rotated-out secret keeps signing.
const MaxRotationGrace = 30 * 24 * time.Hour

// Endpoint is a registered webhook receiver with its signing secret, shown once.
type Endpoint struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// WebhookResult is the outcome of RegisterWebhook. Endpoint is empty for a duplicate: its secret
// was shown when it was first applied.
type WebhookResult struct {
	Result
	Endpoint Endpoint
}

var errNoRegistry = errors.New("app: no webhook registry configured")

// RegisterWebhook adds an HTTPS receiver of change signals and issues its id and signing secret.
func (c *Commands) RegisterWebhook(ctx context.Context, req Request, url string) (WebhookResult, error) {
	if c.webhooks == nil {
		return WebhookResult{}, errNoRegistry
	}
	if err := domain.ValidateHTTPSURL(url); err != nil {
		return WebhookResult{}, &domain.FieldError{Field: "url", Reason: err.Error()}
	}
	ep := Endpoint{ID: NewID("wh"), URL: url, Secret: newWebhookSecret()}
	// The endpoint and its secret are stored before the endpoint exists in the log, so no delivery
	// ever lacks its secret; a failed append removes them again.
	if err := c.webhooks.Register(ctx, string(req.Slug), ep.ID, ep.URL, ep.Secret); err != nil {
		return WebhookResult{}, fmt.Errorf("url: %w", err)
	}
	res, err := c.execute(ctx, req, userCommand, func(e *domain.Establishment) ([]domain.Event, error) {
		return e.RegisterWebhook(ep.ID, ep.URL)
	})
	if err != nil || res.Duplicate {
		if derr := c.webhooks.Remove(context.WithoutCancel(ctx), string(req.Slug), ep.ID); derr != nil {
			c.logger.Error("remove unregistered webhook endpoint", "id", ep.ID, "err", derr)
		}
	}
	if err != nil {
		return WebhookResult{}, err
	}
	out := WebhookResult{Result: res}
	if !res.Duplicate {
		out.Endpoint = ep
	}
	return out, nil
}

// RemoveWebhook removes receiver id; deliveries to it stop.
func (c *Commands) RemoveWebhook(ctx context.Context, req Request, id string) (Result, error) {
	if c.webhooks == nil {
		return Result{}, errNoRegistry
	}
	res, err := c.execute(ctx, req, userCommand, func(e *domain.Establishment) ([]domain.Event, error) {
		return e.RemoveWebhook(id)
	})
	if err != nil {
		return Result{}, err
	}
	// The log says the endpoint is gone; stop deliveries to it.
	if err := c.webhooks.Remove(ctx, string(req.Slug), id); err != nil {
		return Result{}, err
	}
	return res, nil
}

// RotateWebhookSecret issues a new signing secret for receiver id; the previous one keeps
// signing for grace (at most MaxRotationGrace), so that the receiver can switch without missing a
// delivery.
func (c *Commands) RotateWebhookSecret(ctx context.Context, slug domain.Slug, id string, grace time.Duration) (string, error) {
	if c.webhooks == nil {
		return "", errNoRegistry
	}
	if grace < 0 || grace > MaxRotationGrace {
		return "", &domain.FieldError{Field: "grace", Reason: fmt.Sprintf("want a duration from 0s to %s", MaxRotationGrace)}
	}
	secret := newWebhookSecret()
	if err := c.webhooks.RotateSecret(ctx, string(slug), id, secret, grace); err != nil {
		return "", err
	}
	return secret, nil
}
