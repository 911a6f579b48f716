package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Status is where a delivery stands.
type Status string

// Statuses of a delivery. Pending and retrying deliveries are in progress; the others are final.
const (
	StatusPending          Status = "pending"           // queued, or redelivery asked
	StatusRetrying         Status = "retrying"          // an attempt failed; another is scheduled
	StatusDelivered        Status = "delivered"         // the receiver answered 2xx
	StatusFailed           Status = "failed"            // every attempt failed: given up
	StatusSuperseded       Status = "superseded"        // a newer delivery to the endpoint replaced it
	StatusEndpointGone     Status = "endpoint_gone"     // the receiver answered 410 Gone: endpoint disabled
	StatusEndpointDisabled Status = "endpoint_disabled" // not attempted: the endpoint is disabled
	StatusEndpointRemoved  Status = "endpoint_removed"  // not attempted: the endpoint was removed
)

func (s Status) final() bool { return s != "" && s != StatusPending && s != StatusRetrying }

// Limits of the delivery log.
const (
	// maxStoredAttempts bounds the attempts kept in one record; older ones are dropped. It is
	// above the largest MaxAttempts, so a series is always counted whole.
	maxStoredAttempts = 100
	// DefaultLogLimit and MaxLogLimit bound DeliveryLog's answer.
	DefaultLogLimit = 50
	MaxLogLimit     = 1000
)

// Attempt is one try of a delivery.
type Attempt struct {
	// Number is the attempt's rank within its series, from 1 to MaxAttempts.
	Number int `json:"number"`
	// Redelivery is 0 for the original series and n for the n-th manual redelivery.
	Redelivery int `json:"redelivery,omitempty"`
	// Time is when the attempt started; its signatures carry this time.
	Time time.Time `json:"time"`
	// StatusCode is the receiver's HTTP status; 0 when no response came.
	StatusCode int `json:"status_code,omitempty"`
	// Latency is the time to the end of the response, or to the failure.
	Latency time.Duration `json:"-"`
	// Error says why the attempt failed; empty on success.
	Error string `json:"error,omitempty"`
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

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Attempt) UnmarshalJSON(data []byte) error {
	var j attemptJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*a = Attempt{
		Number: j.Number, Redelivery: j.Redelivery, Time: j.Time, StatusCode: j.StatusCode,
		Latency: time.Duration(j.LatencyMS * float64(time.Millisecond)), Error: j.Error,
	}
	return nil
}

// OK reports whether the receiver accepted the attempt with a 2xx status.
func (a Attempt) OK() bool { return a.ok() }

func (a Attempt) ok() bool { return a.StatusCode >= 200 && a.StatusCode < 300 }

func (a Attempt) describe() string {
	if a.Error != "" {
		return a.Error
	}
	return "http status " + strconv.Itoa(a.StatusCode)
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
	Status        Status    `json:"status"`
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

func deliveryKey(endpointID, id string) string { return endpointID + "." + id }

func newDelivery(t task) *Delivery {
	return &Delivery{
		ID: t.ID, Type: t.Type, EndpointID: t.Endpoint, Establishment: t.Establishment,
		Revision: t.Revision, Resources: t.Resources, CreatedAt: t.CreatedAt,
		Status: StatusPending, Redeliveries: t.Series, Attempts: []Attempt{}, Payload: t.Payload,
	}
}

func (r *Delivery) clone() *Delivery {
	c := *r
	c.Resources = slices.Clone(r.Resources)
	c.Attempts = slices.Clone(r.Attempts)
	return &c
}

// attemptsIn counts the attempts of one series.
func (r *Delivery) attemptsIn(series int) int {
	n := 0
	for _, a := range r.Attempts {
		if a.Redelivery == series {
			n++
		}
	}
	return n
}

func (r *Delivery) appendAttempt(a Attempt) {
	r.Attempts = append(r.Attempts, a)
	if extra := len(r.Attempts) - maxStoredAttempts; extra > 0 {
		r.Attempts = slices.Delete(r.Attempts, 0, extra)
	}
}

func (d *Dispatcher) getDelivery(ctx context.Context, key string) (*Delivery, uint64, error) {
	entry, err := d.deliveries.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, ErrDeliveryNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read delivery %s: %w", key, err)
	}
	rec, err := decodeJSON[Delivery](entry.Value())
	if err != nil {
		return nil, 0, fmt.Errorf("decode delivery %s: %w", key, err)
	}
	return &rec, entry.Revision(), nil
}

// saveDelivery applies change to the record and writes it with compare-and-set from revision
// rev (0: create), reloading and applying change again after a concurrent write. On success
// *rec is the stored record.
func (d *Dispatcher) saveDelivery(ctx context.Context, key string, rec *Delivery, rev uint64, t task, change func(*Delivery)) error {
	for range casAttempts {
		r := rec.clone()
		change(r)
		r.Redeliveries = max(r.Redeliveries, t.Series)
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode delivery %s: %w", key, err)
		}
		if rev == 0 {
			_, err = d.deliveries.Create(ctx, key, data)
		} else {
			_, err = d.deliveries.Update(ctx, key, data, rev)
		}
		if err == nil {
			*rec = *r
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("write delivery %s: %w", key, err)
		}
		fresh, freshRev, err := d.getDelivery(ctx, key)
		switch {
		case errors.Is(err, ErrDeliveryNotFound):
			fresh, freshRev = newDelivery(t), 0
		case err != nil:
			return err
		}
		*rec, rev = *fresh, freshRev
	}
	return fmt.Errorf("write delivery %s: too many concurrent writes", key)
}

// DeliveryLog returns the latest deliveries to an endpoint, newest first: at most limit, where
// zero or less means DefaultLogLimit and more than MaxLogLimit means MaxLogLimit. Records older
// than Config.LogRetention are gone.
func (d *Dispatcher) DeliveryLog(ctx context.Context, endpointID string, limit int) ([]Delivery, error) {
	if err := checkKeyPart(endpointID); err != nil {
		return nil, fmt.Errorf("delivery log: %w: id: %w", ErrInvalidEndpoint, err)
	}
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	limit = min(limit, MaxLogLimit)
	keys, err := d.deliveryKeys(ctx, endpointID+".*")
	if err != nil {
		return nil, fmt.Errorf("delivery log of %s: %w", endpointID, err)
	}
	slices.Sort(keys)
	slices.Reverse(keys) // delivery ids sort by creation time
	out := make([]Delivery, 0, min(limit, len(keys)))
	for _, k := range keys {
		if len(out) == limit {
			break
		}
		rec, _, err := d.getDelivery(ctx, k)
		if errors.Is(err, ErrDeliveryNotFound) {
			continue // aged out meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("delivery log of %s: %w", endpointID, err)
		}
		out = append(out, *rec)
	}
	return out, nil
}

// Delivery returns one delivery's record.
func (d *Dispatcher) Delivery(ctx context.Context, deliveryID string) (Delivery, error) {
	_, rec, _, err := d.findDelivery(ctx, deliveryID)
	if err != nil {
		return Delivery{}, fmt.Errorf("get delivery: %w", err)
	}
	return *rec, nil
}

func (d *Dispatcher) deliveryKeys(ctx context.Context, filter string) ([]string, error) {
	lister, err := d.deliveries.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys, nil
}

func (d *Dispatcher) findDelivery(ctx context.Context, deliveryID string) (string, *Delivery, uint64, error) {
	if err := checkKeyPart(deliveryID); err != nil {
		return "", nil, 0, fmt.Errorf("%w: %q", ErrDeliveryNotFound, deliveryID)
	}
	keys, err := d.deliveryKeys(ctx, "*."+deliveryID)
	if err != nil {
		return "", nil, 0, fmt.Errorf("find delivery %s: %w", deliveryID, err)
	}
	if len(keys) == 0 {
		return "", nil, 0, fmt.Errorf("%w: %s", ErrDeliveryNotFound, deliveryID)
	}
	rec, rev, err := d.getDelivery(ctx, keys[0])
	if err != nil {
		return "", nil, 0, err
	}
	return keys[0], rec, rev, nil
}
