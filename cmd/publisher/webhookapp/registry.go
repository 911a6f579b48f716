package webhookapp

import (
	"context"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook"
)

// kinds are the kinds of the webhook dispatcher's refusals. The application layer does not import
// the dispatcher, so they are given here to every error it returns there.
var kinds = []app.KindRule{
	{Target: webhook.ErrInvalidEndpoint, Kind: app.KindInvalid},
	{Target: webhook.ErrRefusedAddress, Kind: app.KindInvalid},
	{Target: webhook.ErrInvalidSecret, Kind: app.KindInvalid},
	{Target: webhook.ErrResolverUnavailable, Kind: app.KindDeclined},
	{Target: webhook.ErrEndpointNotFound, Kind: app.KindNotFound},
	{Target: webhook.ErrDeliveryNotFound, Kind: app.KindNotFound},
	{Target: webhook.ErrDeliveryInProgress, Kind: app.KindConflict},
	{Target: webhook.ErrEndpointDisabled, Kind: app.KindConflict},
	{Target: webhook.ErrNotLatest, Kind: app.KindConflict},
}

// Registry is the webhook registry as the write side's commands use it: endpoints named as the
// domain names them.
type Registry struct{ r *webhook.Registry }

// NewRegistry returns r as the write side's commands use it.
func NewRegistry(r *webhook.Registry) Registry { return Registry{r} }

func (e Registry) Create(ctx context.Context, establishment, id, url, secret string) (string, error) {
	existing, err := e.r.Create(ctx, establishment, id, url, secret)
	return existing, app.Classify(err, kinds...)
}

func (e Registry) Remove(ctx context.Context, establishment, id string) error {
	return app.Classify(e.r.Remove(ctx, establishment, id), kinds...)
}

func (e Registry) RotateSecret(ctx context.Context, establishment, id, secret string, grace time.Duration) error {
	return app.Classify(e.r.RotateSecret(ctx, establishment, id, secret, grace), kinds...)
}

func (e Registry) Endpoints(ctx context.Context, establishment string) ([]domain.WebhookEndpoint, error) {
	endpoints, err := e.r.Endpoints(ctx, establishment)
	if err != nil {
		return nil, app.Classify(err, kinds...)
	}
	out := make([]domain.WebhookEndpoint, len(endpoints))
	for i, ep := range endpoints {
		out[i] = domain.WebhookEndpoint{ID: ep.ID, URL: ep.URL}
	}
	return out, nil
}
