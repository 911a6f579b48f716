package main

import (
	"context"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook"
)

// webhookKinds are the kinds of the webhook dispatcher's refusals. The application layer does not
// import the dispatcher, so they are given here, where it is wired in, to every error it returns
// there.
var webhookKinds = []app.KindRule{
	{Target: webhook.ErrInvalidEndpoint, Kind: app.KindInvalid},
	{Target: webhook.ErrRefusedAddress, Kind: app.KindInvalid},
	{Target: webhook.ErrInvalidSecret, Kind: app.KindInvalid},
	{Target: webhook.ErrResolverUnavailable, Kind: app.KindDeclined},
	{Target: webhook.ErrEndpointNotFound, Kind: app.KindNotFound},
	{Target: webhook.ErrDeliveryNotFound, Kind: app.KindNotFound},
	{Target: webhook.ErrDeliveryInProgress, Kind: app.KindConflict},
	{Target: webhook.ErrEndpointDisabled, Kind: app.KindConflict},
}

// endpointRegistry is the webhook registry as the write side's commands use it: endpoints named
// as the domain names them.
type endpointRegistry struct{ r *webhook.Registry }

func (e endpointRegistry) Create(ctx context.Context, establishment, id, url, secret string) (string, error) {
	existing, err := e.r.Create(ctx, establishment, id, url, secret)
	return existing, app.Classify(err, webhookKinds...)
}

func (e endpointRegistry) Remove(ctx context.Context, establishment, id string) error {
	return app.Classify(e.r.Remove(ctx, establishment, id), webhookKinds...)
}

func (e endpointRegistry) RotateSecret(ctx context.Context, establishment, id, secret string, grace time.Duration) error {
	return app.Classify(e.r.RotateSecret(ctx, establishment, id, secret, grace), webhookKinds...)
}

func (e endpointRegistry) Endpoints(ctx context.Context, establishment string) ([]domain.WebhookEndpoint, error) {
	endpoints, err := e.r.Endpoints(ctx, establishment)
	if err != nil {
		return nil, app.Classify(err, webhookKinds...)
	}
	out := make([]domain.WebhookEndpoint, len(endpoints))
	for i, ep := range endpoints {
		out[i] = domain.WebhookEndpoint{ID: ep.ID, URL: ep.URL}
	}
	return out, nil
}

// deliveries are the webhook dispatcher's endpoints and delivery log as the operator's delivery
// views use them.
type deliveries struct{ d *webhook.Dispatcher }

func (x deliveries) Endpoints(ctx context.Context, establishment string) ([]app.EndpointState, error) {
	eps, err := x.d.Registry().Endpoints(ctx, establishment)
	if err != nil {
		return nil, app.Classify(err, webhookKinds...)
	}
	out := make([]app.EndpointState, len(eps))
	for i, ep := range eps {
		out[i] = app.EndpointState(ep)
	}
	return out, nil
}

func (x deliveries) Endpoint(ctx context.Context, establishment, id string) (app.EndpointState, error) {
	ep, err := x.d.Registry().Endpoint(ctx, establishment, id)
	return app.EndpointState(ep), app.Classify(err, webhookKinds...)
}

func (x deliveries) Enable(ctx context.Context, establishment, id string) error {
	return app.Classify(x.d.Registry().Enable(ctx, establishment, id), webhookKinds...)
}

func (x deliveries) Ping(ctx context.Context, establishment, id string) (app.Attempt, error) {
	at, err := x.d.Ping(ctx, establishment, id)
	return app.Attempt(at), app.Classify(err, webhookKinds...)
}

func (x deliveries) DeliveryLog(ctx context.Context, endpointID string, limit int) ([]app.Delivery, error) {
	log, err := x.d.DeliveryLog(ctx, endpointID, limit)
	if err != nil {
		return nil, app.Classify(err, webhookKinds...)
	}
	out := make([]app.Delivery, len(log))
	for i, d := range log {
		out[i] = delivery(d)
	}
	return out, nil
}

func (x deliveries) Redeliver(ctx context.Context, deliveryID string) error {
	return app.Classify(x.d.Redeliver(ctx, deliveryID), webhookKinds...)
}

// delivery is d as the application layer shows it.
func delivery(d webhook.Delivery) app.Delivery {
	out := app.Delivery{
		ID: d.ID, Type: d.Type, EndpointID: d.EndpointID, Establishment: d.Establishment,
		Revision: d.Revision, Resources: d.Resources, CreatedAt: d.CreatedAt, Status: string(d.Status),
		Note: d.Note, NextAttemptAt: d.NextAttemptAt, Redeliveries: d.Redeliveries, Payload: d.Payload,
	}
	if d.Attempts != nil {
		out.Attempts = make([]app.Attempt, len(d.Attempts))
		for i, at := range d.Attempts {
			out.Attempts[i] = app.Attempt(at)
		}
	}
	return out
}
