package app

import (
	"context"
	"fmt"
	"time"

	"github.com/opencarte/publisher/domain"
)

// platformEndpoints keeps the platform's webhook endpoints, which receive the changes of every
// establishment, or of a list, in batches.
type platformEndpoints interface {
	// Create stores a new endpoint and returns "", or, storing nothing when id exists, its URL.
	Create(ctx context.Context, id, url, secret string, establishments []string) (existing string, err error)
	Remove(ctx context.Context, id string) error
	RotateSecret(ctx context.Context, id, secret string, grace time.Duration) error
	List(ctx context.Context) ([]EndpointState, error)
	Get(ctx context.Context, id string) (EndpointState, error)
	Turn(ctx context.Context, id string) error
	Test(ctx context.Context, id string) (Attempt, error)
	DeliveryLog(ctx context.Context, endpointID string, limit int) ([]Delivery, error)
}

// MaxPlatformFilter bounds the establishments a platform endpoint lists.
const MaxPlatformFilter = 10_000

// Platform registers and operates the platform's webhook endpoints.
type Platform struct{ hooks platformEndpoints }

// NewPlatform returns the platform webhook operations on hooks. It panics on nil: that is a
// wiring mistake.
func NewPlatform(hooks platformEndpoints) *Platform {
	if hooks == nil {
		panic("app: platform webhooks need their endpoints")
	}
	return &Platform{hooks}
}

// Register adds a platform endpoint receiving the changes of the establishments listed (none:
// every one, present or future) and returns it with its signing secret, shown once.
func (p *Platform) Register(ctx context.Context, url string, establishments []string) (EndpointState, string, error) {
	var errs domain.FieldErrorList
	if err := domain.ValidateHTTPSURL(url); err != nil {
		errs.Add(&domain.FieldError{Field: "url", Reason: err.Error()})
	}
	if len(establishments) > MaxPlatformFilter {
		errs.Add(&domain.FieldError{Field: "establishments", Reason: fmt.Sprintf("%d slugs, want at most %d", len(establishments), MaxPlatformFilter)})
	}
	domain.CheckSlugs("establishments", establishments, &errs)
	if err := errs.Err(); err != nil {
		return EndpointState{}, "", err
	}
	id, secret := NewID("wh"), newWebhookSecret()
	if _, err := p.hooks.Create(ctx, id, url, secret, establishments); err != nil {
		return EndpointState{}, "", fmt.Errorf("url: %w", err)
	}
	ep, err := p.hooks.Get(ctx, id)
	return ep, secret, err
}

// Endpoints returns the platform endpoints, by id.
func (p *Platform) Endpoints(ctx context.Context) ([]EndpointState, error) { return p.hooks.List(ctx) }

// Endpoint returns platform endpoint id.
func (p *Platform) Endpoint(ctx context.Context, id string) (EndpointState, error) {
	return p.hooks.Get(ctx, id)
}

// Remove removes platform endpoint id; deliveries to it stop.
func (p *Platform) Remove(ctx context.Context, id string) error { return p.hooks.Remove(ctx, id) }

// RotateSecret issues a new signing secret for platform endpoint id, the previous one signing
// along for grace.
func (p *Platform) RotateSecret(ctx context.Context, id string, grace time.Duration) (string, error) {
	secret := newWebhookSecret()
	if err := p.hooks.RotateSecret(ctx, id, secret, grace); err != nil {
		return "", err
	}
	return secret, nil
}

// Enable turns platform endpoint id on again, and returns it: what changed while it was off is
// delivered at once.
func (p *Platform) Enable(ctx context.Context, id string) (EndpointState, error) {
	if err := p.hooks.Turn(ctx, id); err != nil {
		return EndpointState{}, err
	}
	return p.hooks.Get(ctx, id)
}

// Ping sends platform endpoint id a test delivery now and returns its attempt.
func (p *Platform) Ping(ctx context.Context, id string) (Attempt, error) {
	return p.hooks.Test(ctx, id)
}

// Log returns the last limit deliveries to platform endpoint id, newest first.
func (p *Platform) Log(ctx context.Context, id string, limit int) ([]Delivery, error) {
	if _, err := p.hooks.Get(ctx, id); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxDeliveryLog {
		return nil, &domain.FieldError{Field: "limit", Reason: fmt.Sprintf("want 1 to %d", MaxDeliveryLog)}
	}
	return p.hooks.DeliveryLog(ctx, id, limit)
}
