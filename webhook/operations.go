package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Redeliver sends a finished delivery again: the same id and body, freshly signed, with a new
// series of up to MaxAttempts attempts recorded in the same log entry. It returns once the
// redelivery is queued. A delivery still pending or retrying is refused with
// ErrDeliveryInProgress, one to a disabled endpoint with ErrEndpointDisabled.
func (d *Dispatcher) Redeliver(ctx context.Context, deliveryID string) error {
	key, rec, rev, err := d.findDelivery(ctx, deliveryID)
	if err != nil {
		return fmt.Errorf("redeliver: %w", err)
	}
	if !rec.Status.final() {
		return fmt.Errorf("redeliver %s: %w", deliveryID, ErrDeliveryInProgress)
	}
	ep, _, err := d.getEndpoint(ctx, endpointKey(rec.Establishment, rec.EndpointID))
	if err != nil {
		return fmt.Errorf("redeliver %s: %w", deliveryID, err)
	}
	if ep.Disabled {
		return fmt.Errorf("redeliver %s: %w", deliveryID, ErrEndpointDisabled)
	}
	if err := d.checkPlatformRedelivery(ctx, rec); err != nil {
		return fmt.Errorf("redeliver %s: %w", deliveryID, err)
	}
	t := task{
		ID: rec.ID, Type: rec.Type, Endpoint: rec.EndpointID, Establishment: rec.Establishment,
		Revision: rec.Revision, Resources: rec.Resources, CreatedAt: rec.CreatedAt,
		Series: rec.Redeliveries + 1, Payload: rec.Payload,
	}
	if err := d.publishManual(ctx, t); err != nil {
		return fmt.Errorf("redeliver %s: %w", deliveryID, err)
	}
	// Show it pending, unless a dispatcher has already taken it.
	err = d.saveDelivery(ctx, key, rec, rev, t, func(r *Delivery) {
		if r.Redeliveries < t.Series {
			r.Status, r.Note, r.NextAttemptAt = StatusPending, "", time.Time{}
		}
	})
	if err != nil {
		return fmt.Errorf("redeliver %s: %w", deliveryID, err)
	}
	return nil
}

// Ping sends a test delivery (type EventPing) to an endpoint, enabled or not, and returns the
// attempt once it is over. It is tried once, logged like any delivery, and a 410 Gone answer
// disables the endpoint. The error is for a missing endpoint or a failure to log; a receiver's
// failure is in the Attempt.
func (d *Dispatcher) Ping(ctx context.Context, establishment, endpointID string) (Attempt, error) {
	if err := checkEndpointKey(establishment, endpointID); err != nil {
		return Attempt{}, fmt.Errorf("ping: %w", err)
	}
	key := endpointKey(establishment, endpointID)
	ep, _, err := d.getEndpoint(ctx, key)
	if err != nil {
		return Attempt{}, fmt.Errorf("ping %s: %w", key, err)
	}
	now := d.cfg.Now().UTC()
	id := newDeliveryID(now)
	body, err := encodeBody(Payload{
		ID: id, Type: EventPing, Timestamp: now,
		Data: PayloadData{Establishment: strings.TrimPrefix(establishment, PlatformScope), EndpointID: endpointID},
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("ping %s: %w", key, err)
	}
	a, _ := d.attempt(ctx, ep, id, body)
	a.Number = 1
	status := StatusFailed
	switch {
	case a.ok():
		status = StatusDelivered
	case a.StatusCode == 410:
		status = StatusEndpointGone
		if _, err := d.updateEndpoint(ctx, key, false, disableChange(a.Time, "receiver answered 410 Gone")); err != nil {
			return a, fmt.Errorf("ping %s: disable endpoint: %w", key, err)
		}
	}
	t := task{ID: id, Type: EventPing, Endpoint: endpointID, Establishment: establishment, CreatedAt: now, Payload: body}
	rec := newDelivery(t)
	if err := d.saveDelivery(ctx, deliveryKey(endpointID, id), rec, 0, t, func(r *Delivery) {
		r.appendAttempt(a)
		r.Status = status
	}); err != nil {
		return a, fmt.Errorf("ping %s: %w", key, err)
	}
	return a, nil
}

// Stats counts what the dispatchers have in hand, for status output.
type Stats struct {
	// Windows counts establishments whose debounce window is open or just closed.
	Windows int `json:"windows"`
	// Pending counts deliveries queued, in flight or waiting for a retry.
	Pending int `json:"pending"`
	// Failing counts endpoints whose latest delivery failed and waits for a retry.
	Failing int `json:"failing"`
	// Missed counts endpoints with given-up changes, to be listed in their next delivery.
	Missed int `json:"missed"`
	// Endpoints and Disabled count registered and disabled endpoints.
	Endpoints int `json:"endpoints"`
	Disabled  int `json:"disabled"`
}

// Stats returns the current counts, read from JetStream and the endpoint mirror: the same from
// any process.
func (d *Dispatcher) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	if err := d.mirror.wait(ctx); err != nil {
		return s, fmt.Errorf("webhook stats: %w", err)
	}
	info, err := d.stream.Info(ctx, jetstream.WithSubjectFilter(subjWindow+"*"))
	if err != nil {
		return s, fmt.Errorf("webhook stats: stream %s: %w", StreamName, err)
	}
	s.Windows = len(info.State.Subjects)
	due, err := d.due.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("webhook stats: consumer %s: %w", consumerDue, err)
	}
	s.Windows += int(due.NumPending) + due.NumAckPending
	deliver, err := d.deliver.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("webhook stats: consumer %s: %w", consumerDeliver, err)
	}
	s.Pending = int(deliver.NumPending) + deliver.NumAckPending
	s.Endpoints, s.Disabled, s.Failing, s.Missed = d.mirror.counts()
	return s, nil
}
