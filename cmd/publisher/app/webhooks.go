package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// webhookRegistry keeps webhook endpoints with their signing secrets, outside the event log. It is
// their one owner: an endpoint exists exactly when the registry holds it, and registering or
// removing one is one write there, which no crash can leave half done. Endpoints are delivery
// settings, not content: nothing renders them and no revision depends on them, their secrets
// must stay out of the log, and the dispatcher reads the registry.
type webhookRegistry interface {
	// Create stores a new endpoint and returns "", or, storing nothing when id exists, the URL
	// it is registered with.
	Create(ctx context.Context, establishment, id, url, secret string) (existing string, err error)
	Remove(ctx context.Context, establishment, id string) error
	RotateSecret(ctx context.Context, establishment, id, newSecret string, grace time.Duration) error
	Endpoints(ctx context.Context, establishment string) ([]domain.WebhookEndpoint, error)
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

// RegisterWebhook adds an HTTPS receiver of change signals to an existing establishment and
// issues its id and signing secret. Under an idempotency key the id follows from the key, so that
// a retry finds the endpoint it made: it is a duplicate, shown without its secret, and the key
// sent again with another URL is refused.
func (c *Commands) RegisterWebhook(ctx context.Context, req Request, url string) (WebhookResult, error) {
	if c.webhooks == nil {
		return WebhookResult{}, errNoRegistry
	}
	if err := domain.ValidateHTTPSURL(url); err != nil {
		return WebhookResult{}, &domain.FieldError{Field: "url", Reason: err.Error()}
	}
	st, err := c.state(ctx, req.Slug)
	if err != nil {
		return WebhookResult{}, err
	}
	if err := c.roomFor(); err != nil {
		return WebhookResult{}, err
	}
	res := Result{Slug: req.Slug, Version: st.Version}
	ep := Endpoint{ID: endpointID(req.CommandID), URL: url, Secret: newWebhookSecret()}
	existing, err := c.webhooks.Create(ctx, string(req.Slug), ep.ID, ep.URL, ep.Secret)
	switch {
	case errors.Is(events.StorageFull(err), events.ErrStorageFull):
		return WebhookResult{}, unavailable(events.StorageFull(err))
	case err != nil:
		return WebhookResult{}, fmt.Errorf("url: %w", err)
	case existing == "":
		c.audit(ctx, req.as(domain.TypeWebhookRegistered, ep.ID), ep.ID, 0)
		return WebhookResult{Result: res, Endpoint: ep}, nil
	case existing == url:
		res.Duplicate = true
		return WebhookResult{Result: res}, nil
	}
	return WebhookResult{}, fmt.Errorf("Idempotency-Key: %w", ErrIdempotencyKeyReused)
}

// endpointID returns the id of the endpoint a registration makes (see KeyedID).
func endpointID(commandID string) string { return KeyedID("wh", commandID) }

// RemoveWebhook removes receiver id of an establishment; deliveries to it stop.
func (c *Commands) RemoveWebhook(ctx context.Context, req Request, id string) (Result, error) {
	if c.webhooks == nil {
		return Result{}, errNoRegistry
	}
	st, err := c.state(ctx, req.Slug)
	if err != nil {
		return Result{}, err
	}
	if err := c.webhooks.Remove(ctx, string(req.Slug), id); err != nil {
		return Result{}, err
	}
	c.audit(ctx, req.as(domain.TypeWebhookRemoved, id), NewID("cmd"), 0)
	return Result{Slug: req.Slug, Version: st.Version}, nil
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
	c.audit(ctx, Request{Slug: slug}.as(ActionSecretRotated, id), NewID("cmd"), 0)
	return secret, nil
}
