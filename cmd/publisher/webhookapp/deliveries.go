package webhookapp

import (
	"context"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/webhook"
)

// Deliveries are the webhook dispatcher's endpoints and delivery log as the operator's delivery
// views use them.
type Deliveries struct{ d *webhook.Dispatcher }

// NewDeliveries returns d's endpoints and delivery log as the operator's views use them.
func NewDeliveries(d *webhook.Dispatcher) Deliveries { return Deliveries{d} }

func (x Deliveries) Endpoints(ctx context.Context, establishment string) ([]app.EndpointState, error) {
	eps, err := x.d.Registry().Endpoints(ctx, establishment)
	if err != nil {
		return nil, app.Classify(err, kinds...)
	}
	out := make([]app.EndpointState, len(eps))
	for i, ep := range eps {
		out[i] = app.EndpointState(ep)
	}
	return out, nil
}

func (x Deliveries) Endpoint(ctx context.Context, establishment, id string) (app.EndpointState, error) {
	ep, err := x.d.Registry().Endpoint(ctx, establishment, id)
	return app.EndpointState(ep), app.Classify(err, kinds...)
}

func (x Deliveries) Enable(ctx context.Context, establishment, id string) error {
	return app.Classify(x.d.Registry().Enable(ctx, establishment, id), kinds...)
}

func (x Deliveries) Ping(ctx context.Context, establishment, id string) (app.Attempt, error) {
	at, err := x.d.Ping(ctx, establishment, id)
	return app.Attempt(at), app.Classify(err, kinds...)
}

func (x Deliveries) DeliveryLog(ctx context.Context, endpointID string, limit int) ([]app.Delivery, error) {
	log, err := x.d.DeliveryLog(ctx, endpointID, limit)
	if err != nil {
		return nil, app.Classify(err, kinds...)
	}
	out := make([]app.Delivery, len(log))
	for i, d := range log {
		out[i] = delivery(d)
	}
	return out, nil
}

func (x Deliveries) Redeliver(ctx context.Context, deliveryID string) error {
	return app.Classify(x.d.Redeliver(ctx, deliveryID), kinds...)
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
