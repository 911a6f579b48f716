package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencarte/publisher/domain"
)

// Bounds of a delivery log asked for.
const (
	// DefaultDeliveryLog is how many deliveries Deliveries.Log returns unless asked.
	DefaultDeliveryLog = 50
	// MaxDeliveryLog is the most deliveries Deliveries.Log returns.
	MaxDeliveryLog = 1000
)

// endpointStates are the webhook registry's views of endpoints with their delivery state, and
// the switch that turns one a receiver turned off on again.
type endpointStates interface {
	Endpoints(ctx context.Context, establishment string) ([]EndpointState, error)
	Endpoint(ctx context.Context, establishment, id string) (EndpointState, error)
	Enable(ctx context.Context, establishment, id string) error
}

// deliveryLog is the webhook dispatcher's log of deliveries and its actions on them.
type deliveryLog interface {
	Ping(ctx context.Context, establishment, id string) (Attempt, error)
	DeliveryLog(ctx context.Context, endpointID string, limit int) ([]Delivery, error)
	Redeliver(ctx context.Context, deliveryID string) error
}

// Deliveries are the operator's views and actions on the webhook endpoints of establishments and
// on their deliveries: the endpoints with their delivery state, enabling one a receiver turned
// off, a test delivery, the delivery log and a redelivery. They act on the dispatcher's registry
// and log, not on the event log: nothing here is content. It is safe for concurrent use.
type Deliveries struct {
	commands  *Commands
	endpoints endpointStates
	log       deliveryLog
}

// NewDeliveries returns the delivery operations on the establishments of c, of the endpoints and
// the log of one dispatcher. The refusals of both carry their kinds (see Classify). It panics on
// a nil argument: that is a wiring mistake.
func NewDeliveries(c *Commands, endpoints endpointStates, log deliveryLog) *Deliveries {
	if c == nil || endpoints == nil || log == nil {
		panic("app: deliveries need commands, endpoints and a delivery log")
	}
	return &Deliveries{commands: c, endpoints: endpoints, log: log}
}

// Endpoints returns the endpoints of slug with their delivery state. It reports
// domain.ErrNotFound for an unknown establishment, which has none.
func (d *Deliveries) Endpoints(ctx context.Context, slug domain.Slug) ([]EndpointState, error) {
	eps, err := d.endpoints.Endpoints(ctx, string(slug))
	if err != nil {
		return nil, err
	}
	if len(eps) == 0 {
		// No endpoint: an establishment without any, or none at all.
		if _, err := d.commands.Get(ctx, slug); err != nil {
			return nil, err
		}
	}
	return eps, nil
}

// Enable turns endpoint id of slug on again, after a receiver turned it off, and returns it.
func (d *Deliveries) Enable(ctx context.Context, slug domain.Slug, id string) (EndpointState, error) {
	if err := d.endpoints.Enable(ctx, string(slug), id); err != nil {
		return EndpointState{}, err
	}
	d.commands.audit(ctx, Request{Slug: slug}.as(ActionEndpointEnabled, id), NewID("cmd"), 0)
	return d.endpoints.Endpoint(ctx, string(slug), id)
}

// Ping sends endpoint id of slug a test delivery now and returns its attempt: a receiver that
// fails is reported in the attempt, not as an error.
func (d *Deliveries) Ping(ctx context.Context, slug domain.Slug, id string) (Attempt, error) {
	at, err := d.log.Ping(ctx, string(slug), id)
	if err == nil {
		d.commands.audit(ctx, Request{Slug: slug}.as(ActionEndpointPinged, id), NewID("cmd"), 0)
	}
	return at, err
}

// Log returns the last limit deliveries to endpoint id of slug, newest first. The log is kept by
// endpoint: the endpoint is checked to be slug's first, then limit to be from 1 to
// MaxDeliveryLog.
func (d *Deliveries) Log(ctx context.Context, slug domain.Slug, id string, limit int) ([]Delivery, error) {
	if _, err := d.endpoints.Endpoint(ctx, string(slug), id); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxDeliveryLog {
		return nil, &domain.FieldError{Field: "limit", Reason: fmt.Sprintf("want 1 to %d", MaxDeliveryLog)}
	}
	return d.log.DeliveryLog(ctx, id, limit)
}

// Redeliver queues finished delivery id to be sent again, as a new series of attempts; one still
// in progress, or to a disabled endpoint, is refused as a conflict.
func (d *Deliveries) Redeliver(ctx context.Context, id string) error {
	return d.log.Redeliver(ctx, id)
}

// EndpointState is a registered webhook receiver as operators see it, with its delivery state.
// It never holds a secret.
type EndpointState struct {
	ID string `json:"id"`
	// Establishment is the endpoint's establishment; empty for a platform endpoint.
	Establishment string `json:"establishment,omitempty"`
	// Establishments are those a platform endpoint receives the changes of; none: every one.
	Establishments []string  `json:"establishments,omitempty"`
	URL            string    `json:"url"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Disabled endpoints get no delivery: a receiver answering 410 Gone disables its endpoint.
	Disabled       bool      `json:"disabled"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	DisabledAt     time.Time `json:"disabled_at,omitzero"`
	// PreviousSecretUntil is the end of a rotation's grace period, while the previous secret
	// still signs alongside the current one; zero outside a rotation.
	PreviousSecretUntil time.Time `json:"previous_secret_until,omitzero"`
	// Failing is true while the endpoint's latest delivery failed and waits for a retry.
	Failing      bool      `json:"failing"`
	FailingSince time.Time `json:"failing_since,omitzero"`
	LastError    string    `json:"last_error,omitempty"`
	// MissedResources are the resources of deliveries given up since the endpoint last accepted
	// one; the next delivery lists them too.
	MissedResources []string `json:"missed_resources,omitempty"`
}

// Attempt is one try of a delivery.
type Attempt struct {
	Number     int           // rank within its series, from 1
	Redelivery int           // 0 for the original series, n for the n-th manual redelivery
	Time       time.Time     // when it started; its signatures carry this time
	StatusCode int           // the receiver's HTTP status; 0 when no response came
	Latency    time.Duration // to the end of the response, or to the failure
	Error      string        // why it failed; empty on success
}

type attemptJSON struct {
	Number     int       `json:"number"`
	Redelivery int       `json:"redelivery,omitempty"`
	Time       time.Time `json:"time"`
	StatusCode int       `json:"status_code,omitempty"`
	LatencyMS  float64   `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
}

// MarshalJSON writes Latency as "latency_ms", in milliseconds.
func (a Attempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(attemptJSON{
		Number: a.Number, Redelivery: a.Redelivery, Time: a.Time, StatusCode: a.StatusCode,
		LatencyMS: float64(a.Latency) / float64(time.Millisecond), Error: a.Error,
	})
}

// Delivery is the log record of one delivery to one endpoint.
type Delivery struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	EndpointID    string    `json:"endpoint_id"`
	Establishment string    `json:"establishment"`
	Revision      int64     `json:"content_revision,omitempty"`
	Resources     []string  `json:"resources,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// Status is where the delivery stands: pending, retrying, delivered, failed, superseded,
	// endpoint_gone, endpoint_disabled or endpoint_removed.
	Status string `json:"status"`
	// Note adds to the status, for instance which delivery superseded this one.
	Note string `json:"note,omitempty"`
	// NextAttemptAt is when the next attempt is due while retrying.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// Redeliveries counts manual redeliveries.
	Redeliveries int       `json:"redeliveries,omitempty"`
	Attempts     []Attempt `json:"attempts"`
	// Payload is the exact body sent, on every attempt.
	Payload json.RawMessage `json:"payload"`
}
