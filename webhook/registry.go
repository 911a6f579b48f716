package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/events"
)

// EndpointsBucket is the KV bucket of registered endpoints and their signing secrets, one key
// "<establishment>.<endpoint id>" per endpoint. Secrets live here and nowhere else: never in the
// event log, never in a delivery record.
const EndpointsBucket = "WEBHOOKS"

// casAttempts bounds the compare-and-set retries of one record update.
const casAttempts = 32

// Endpoint is a registered receiver as operators see it. It never holds a secret.
type Endpoint struct {
	ID string `json:"id"`
	// Establishment is the endpoint's establishment; empty for a platform endpoint.
	Establishment string `json:"establishment,omitempty"`
	// Establishments are those a platform endpoint receives the changes of; none: every one.
	Establishments []string  `json:"establishments,omitempty"`
	URL            string    `json:"url"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Disabled endpoints get no delivery. A receiver answering 410 Gone disables its endpoint;
	// Enable, or registering the same id again, enables it.
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

// signingSecret is one secret of an endpoint; a zero Until means it is the current one. It is
// sealed under the data key DataKey (see vault); Value holds a secret stored in clear before
// secrets were encrypted, until Reencrypt seals it.
type signingSecret struct {
	DataKey string    `json:"data_key,omitempty"`
	Sealed  string    `json:"sealed,omitempty"`
	Value   string    `json:"value,omitempty"`
	Until   time.Time `json:"until,omitzero"`
}

// dataKeys returns the names of the data keys of secrets.
func dataKeys(secrets []signingSecret) []string {
	var out []string
	for _, s := range secrets {
		if s.DataKey != "" {
			out = append(out, s.DataKey)
		}
	}
	return out
}

// droppedKeys returns the data keys of before that after no longer uses.
func droppedKeys(before, after []signingSecret) []string {
	kept := dataKeys(after)
	var out []string
	for _, k := range dataKeys(before) {
		if !slices.Contains(kept, k) {
			out = append(out, k)
		}
	}
	return out
}

// missed holds what an endpoint did not receive: the resources of given-up deliveries. Gen
// rises at every change, so that a delivery clears only what it carried.
type missed struct {
	Revision  int64    `json:"content_revision"`
	Resources []string `json:"resources"`
	Gen       uint64   `json:"gen"`
}

// add returns m with a change added, in a new generation. m may be nil.
func (m *missed) add(revision int64, resources []string) *missed {
	if m == nil {
		m = &missed{}
	}
	return &missed{Revision: max(m.Revision, revision), Resources: events.MergeResources(m.Resources, resources), Gen: m.Gen + 1}
}

// endpointRecord is the stored form of an endpoint.
type endpointRecord struct {
	ID             string          `json:"id"`
	Establishment  string          `json:"establishment"`
	URL            string          `json:"url"`
	Secrets        []signingSecret `json:"secrets"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Disabled       bool            `json:"disabled,omitempty"`
	DisabledReason string          `json:"disabled_reason,omitempty"`
	DisabledAt     time.Time       `json:"disabled_at,omitzero"`
	Failing        string          `json:"failing,omitempty"` // id of the delivery waiting for a retry
	FailingSince   time.Time       `json:"failing_since,omitzero"`
	LastError      string          `json:"last_error,omitempty"`
	Missed         *missed         `json:"missed,omitempty"`
	// A platform endpoint's filter (none: every establishment), its position in the signals (the
	// last delivered with a 2xx, or passed over), the last signal of the last window closed, the
	// batch it has queued and how many it queued.
	Establishments []string       `json:"establishments,omitempty"`
	Cursor         uint64         `json:"cursor,omitempty"`
	Target         uint64         `json:"target,omitempty"`
	Batch          *platformBatch `json:"batch,omitempty"`
	Formed         uint64         `json:"formed,omitempty"`
	// Removed marks the record an endpoint leaves when it is removed: its id and URL, no secret.
	// It is absent to every reader but a creation, so that a registration retried under the id
	// after the removal finds it removed instead of registering the endpoint again.
	Removed time.Time `json:"removed,omitzero"`
}

func endpointKey(establishment, id string) string { return establishment + "." + id }

// public returns what operators may see of r at time now.
func (r *endpointRecord) public(now time.Time) Endpoint {
	e := Endpoint{
		ID: r.ID, Establishment: r.Establishment, Establishments: slices.Clone(r.Establishments), URL: r.URL,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Disabled: r.Disabled, DisabledReason: r.DisabledReason, DisabledAt: r.DisabledAt,
		Failing: r.Failing != "", FailingSince: r.FailingSince, LastError: r.LastError,
	}
	for _, s := range r.Secrets {
		if !s.Until.IsZero() && s.Until.After(now) {
			e.PreviousSecretUntil = s.Until
		}
	}
	if r.Missed != nil {
		e.MissedResources = slices.Clone(r.Missed.Resources)
	}
	if r.Establishment == PlatformScope {
		e.Establishment = ""
	}
	return e
}

// keys returns the keys that sign r's deliveries at time now: the current one first, then a
// previous one still within its grace period.
func (d *Dispatcher) keys(ctx context.Context, r *endpointRecord, now time.Time) ([][]byte, error) {
	var keys [][]byte
	for _, s := range r.Secrets {
		if !s.Until.IsZero() && !s.Until.After(now) {
			continue
		}
		k, err := d.vault.open(ctx, endpointKey(r.Establishment, r.ID), s)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: stored secret: %w", r.ID, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("endpoint %s: no signing secret", r.ID)
	}
	return keys, nil
}

// Registry registers, rotates and removes receiver endpoints. Admin APIs call it with plain
// strings; it is safe for concurrent use, also from several processes.
type Registry struct {
	d *Dispatcher
}

func checkEndpointKey(establishment, id string) error {
	var errs []error
	if err := checkKeyPart(establishment); err != nil {
		errs = append(errs, fmt.Errorf("establishment: %w", err))
	}
	if err := checkKeyPart(id); err != nil {
		errs = append(errs, fmt.Errorf("id: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEndpoint, err)
	}
	return nil
}

// Register stores an endpoint: an id unique across establishments, an https URL whose host is,
// or resolves only to, addresses the configuration allows, and its signing secret ("whsec_" +
// base64 of 24 to 64 bytes).
// Registering an existing id again replaces its URL and secret and enables it; what it missed
// stays listed for its next delivery. Errors match ErrInvalidEndpoint, ErrRefusedAddress or
// ErrInvalidSecret for bad input.
func (r *Registry) Register(ctx context.Context, establishment, id, rawURL, secret string) error {
	_, err := r.register(ctx, establishment, id, rawURL, secret, true, nil)
	return err
}

// Create stores a new endpoint as Register does, and returns "". When the id is already
// registered for the establishment, as by a registration retried with the same id, it stores
// nothing and returns the URL registered, read from the bucket.
func (r *Registry) Create(ctx context.Context, establishment, id, rawURL, secret string) (existing string, err error) {
	return r.register(ctx, establishment, id, rawURL, secret, false, nil)
}

// endpointExists stops the creation of an endpoint that exists, naming its URL.
type endpointExists struct{ url string }

func (e endpointExists) Error() string { return "endpoint exists" }

// register stores the endpoint; fresh, unless nil, sets up a record made anew.
func (r *Registry) register(ctx context.Context, establishment, id, rawURL, secret string, replace bool, fresh func(*endpointRecord)) (existing string, err error) {
	if err := checkEndpointKey(establishment, id); err != nil {
		return "", fmt.Errorf("register endpoint: %w", err)
	}
	var errs []error
	if err := r.d.policy.checkReceiverURL(ctx, r.d.resolver, rawURL); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseSecret(secret); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", id, err)
	}
	// Endpoint ids are unique across establishments: the delivery log is keyed by id alone.
	lister, err := r.d.endpoints.ListKeysFiltered(ctx, "*."+id)
	if err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", id, err)
	}
	for k := range lister.Keys() {
		if k != endpointKey(establishment, id) {
			return "", fmt.Errorf("register endpoint %s: %w: id: in use by another establishment", id, ErrInvalidEndpoint)
		}
	}
	now := r.d.cfg.Now().UTC()
	key := endpointKey(establishment, id)
	sealed, err := r.d.vault.seal(ctx, key, secret)
	if err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", key, err)
	}
	var dropped []string
	err = r.change(ctx, key, true, func(rec *endpointRecord) error {
		if rec.ID != "" && !replace {
			return endpointExists{rec.URL}
		}
		if rec.ID == "" || !rec.Removed.IsZero() {
			*rec = endpointRecord{ID: id, Establishment: establishment, CreatedAt: now}
			if fresh != nil {
				fresh(rec)
			}
		}
		rec.URL = rawURL
		dropped = dataKeys(rec.Secrets)
		rec.Secrets = []signingSecret{sealed}
		rec.UpdatedAt = now
		rec.Disabled, rec.DisabledReason, rec.DisabledAt = false, "", time.Time{}
		rec.Failing, rec.FailingSince, rec.LastError = "", time.Time{}, ""
		return nil
	})
	switch _, exists := errors.AsType[endpointExists](err); {
	case exists:
		dropped = []string{sealed.DataKey} // not stored
	case definitelyNotWritten(err):
		dropped = []string{sealed.DataKey}
	case err != nil:
		// The write may have been stored all the same (an answer lost in an election, a proposal
		// committed after the client gave up): every key waits for a sweep, which erases those
		// no record uses once they are old enough.
		dropped = nil
	}
	r.erase(ctx, dropped)
	if exists, ok := errors.AsType[endpointExists](err); ok {
		return exists.url, nil
	}
	if err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", key, err)
	}
	return "", nil
}

// definitelyNotWritten says whether a change failed without writing: refused by its own logic
// (the endpoint exists, or not), or by the store's compare-and-set every time. Any other error
// leaves the outcome unknown.
func definitelyNotWritten(err error) bool {
	_, exists := errors.AsType[endpointExists](err)
	return exists || errors.Is(err, ErrEndpointNotFound) || errors.Is(err, errTooManyWrites) || errors.Is(err, errSeal)
}

// erase erases the data keys of secrets no record uses any more. One that fails to go is logged:
// the change it follows is made, and the secret stays sealed under the master key.
func (r *Registry) erase(ctx context.Context, dataKeys []string) {
	if err := r.d.vault.erase(context.WithoutCancel(ctx), dataKeys...); err != nil {
		r.d.logger.Warn("webhook: a signing secret's data key could not be erased", "err", err)
	}
}

// Remove deletes an endpoint, and its secrets: what stays under its key is a mark of the removal
// with its id and URL, absent to every reader. Its queued or retrying deliveries end, unsent, at
// their next attempt, logged "endpoint_removed"; its delivery log stays until it ages out.
func (r *Registry) Remove(ctx context.Context, establishment, id string) error {
	if err := checkEndpointKey(establishment, id); err != nil {
		return fmt.Errorf("remove endpoint: %w", err)
	}
	key := endpointKey(establishment, id)
	now := r.d.cfg.Now().UTC()
	var dropped []string
	err := r.change(ctx, key, false, func(rec *endpointRecord) error {
		dropped = dataKeys(rec.Secrets)
		*rec = endpointRecord{ID: rec.ID, Establishment: rec.Establishment, URL: rec.URL, CreatedAt: rec.CreatedAt, UpdatedAt: now, Removed: now}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove endpoint %s: %w", key, err)
	}
	r.erase(ctx, dropped)
	return nil
}

// RotateSecret makes newSecret the endpoint's signing secret. During grace (0 to
// MaxRotationGrace) the current secret keeps signing too: every delivery then carries two
// signatures, so receivers can switch at their own pace. A previous rotation's secret is dropped.
func (r *Registry) RotateSecret(ctx context.Context, establishment, id, newSecret string, grace time.Duration) error {
	if err := checkEndpointKey(establishment, id); err != nil {
		return fmt.Errorf("rotate secret: %w", err)
	}
	if _, err := parseSecret(newSecret); err != nil {
		return fmt.Errorf("rotate secret of %s: %w", id, err)
	}
	if grace < 0 || grace > MaxRotationGrace {
		return fmt.Errorf("rotate secret of %s: %w: grace %s is outside 0 to %s", id, ErrInvalidSecret, grace, MaxRotationGrace)
	}
	now := r.d.cfg.Now().UTC()
	key := endpointKey(establishment, id)
	newKey, _ := parseSecret(newSecret)
	sealed, err := r.d.vault.seal(ctx, key, newSecret)
	if err != nil {
		return fmt.Errorf("rotate secret of %s: %w", key, err)
	}
	var dropped []string
	err = r.change(ctx, key, false, func(rec *endpointRecord) error {
		secrets := []signingSecret{sealed}
		if grace > 0 {
			for _, s := range rec.Secrets {
				if !s.Until.IsZero() {
					continue
				}
				// The current secret signs on during the grace, unless it is the new one.
				if old, err := r.d.vault.open(ctx, key, s); err != nil || !bytes.Equal(old, newKey) {
					s.Until = now.Add(grace)
					secrets = append(secrets, s)
				}
			}
		}
		dropped = droppedKeys(rec.Secrets, secrets)
		rec.Secrets = secrets
		rec.UpdatedAt = now
		return nil
	})
	if err != nil {
		if definitelyNotWritten(err) {
			r.erase(ctx, []string{sealed.DataKey})
		}
		return fmt.Errorf("rotate secret of %s: %w", key, err)
	}
	r.erase(ctx, dropped)
	return nil
}

// Enable enables a disabled endpoint. Changes made while it was disabled are not delivered:
// its receiver re-reads everything once.
func (r *Registry) Enable(ctx context.Context, establishment, id string) error {
	if err := checkEndpointKey(establishment, id); err != nil {
		return fmt.Errorf("enable endpoint: %w", err)
	}
	now := r.d.cfg.Now().UTC()
	key := endpointKey(establishment, id)
	err := r.change(ctx, key, false, func(rec *endpointRecord) error {
		if !rec.Disabled {
			return errUnchanged
		}
		rec.Disabled, rec.DisabledReason, rec.DisabledAt = false, "", time.Time{}
		rec.UpdatedAt = now
		return nil
	})
	if err != nil {
		return fmt.Errorf("enable endpoint %s: %w", key, err)
	}
	if establishment == PlatformScope {
		if err := r.d.enablePlatform(ctx, id); err != nil {
			return fmt.Errorf("enable endpoint %s: deliver the changes missed: %w", key, err)
		}
		return nil
	}
	// Changes made while it was disabled are told at once, not at the next change.
	rec, _, err := r.d.getEndpoint(ctx, key)
	if err != nil {
		return fmt.Errorf("enable endpoint %s: %w", key, err)
	}
	if rec.Missed != nil && !rec.Disabled {
		w := window{Establishment: establishment, Revision: rec.Missed.Revision, Signals: 1}
		dedupe := "enable-" + strconv.FormatInt(now.UnixNano(), 10)
		if err := r.d.enqueue(ctx, w, rec, dedupe, now); err != nil {
			return fmt.Errorf("enable endpoint %s: deliver the changes missed: %w", key, err)
		}
	}
	return nil
}

// Endpoint returns one endpoint of an establishment.
func (r *Registry) Endpoint(ctx context.Context, establishment, id string) (Endpoint, error) {
	if err := checkEndpointKey(establishment, id); err != nil {
		return Endpoint{}, fmt.Errorf("get endpoint: %w", err)
	}
	rec, _, err := r.d.getEndpoint(ctx, endpointKey(establishment, id))
	if err != nil {
		return Endpoint{}, fmt.Errorf("get endpoint %s: %w", id, err)
	}
	return rec.public(r.d.cfg.Now()), nil
}

// Endpoints returns the endpoints of an establishment, by id, from this process's mirror of the
// bucket, without a request to NATS: a change this process made shows at once, one another
// process made a moment later.
func (r *Registry) Endpoints(ctx context.Context, establishment string) ([]Endpoint, error) {
	if err := checkKeyPart(establishment); err != nil {
		return nil, fmt.Errorf("list endpoints: %w: establishment: %w", ErrInvalidEndpoint, err)
	}
	if err := r.d.mirror.wait(ctx); err != nil {
		return nil, fmt.Errorf("list endpoints of %s: %w", establishment, err)
	}
	recs := r.d.mirror.endpoints(establishment)
	slices.SortFunc(recs, func(a, b *endpointRecord) int { return strings.Compare(a.ID, b.ID) })
	now := r.d.cfg.Now()
	out := make([]Endpoint, len(recs))
	for i, rec := range recs {
		out[i] = rec.public(now)
	}
	return out, nil
}

// errTooManyWrites ends an update that lost every compare-and-set.
var errTooManyWrites = errors.New("too many concurrent writes")

// errSeal wraps a failure to seal a secret inside a change, which then writes nothing.
var errSeal = errors.New("seal")

// errUnchanged tells updateEndpoint that the update has nothing to write.
var errUnchanged = errors.New("unchanged")

// getEndpoint reads one endpoint record and its KV revision.
func (d *Dispatcher) getEndpoint(ctx context.Context, key string) (*endpointRecord, uint64, error) {
	rec, rev, err := d.getRecord(ctx, key)
	if err == nil && !rec.Removed.IsZero() {
		return nil, 0, ErrEndpointNotFound
	}
	return rec, rev, err
}

// getRecord reads the record under key, the mark of a removed endpoint included.
func (d *Dispatcher) getRecord(ctx context.Context, key string) (*endpointRecord, uint64, error) {
	entry, err := d.endpoints.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, ErrEndpointNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	rec, err := decodeJSON[endpointRecord](entry.Value())
	if err != nil {
		return nil, 0, fmt.Errorf("decode endpoint %s: %w", key, err)
	}
	return &rec, entry.Revision(), nil
}

// updateEndpoint applies change to the endpoint record under key with compare-and-set, retrying
// on a concurrent write, and returns the revision written (0 when nothing was). With create, a
// missing record starts empty; otherwise it is ErrEndpointNotFound. A change returning
// errUnchanged writes nothing.
func (d *Dispatcher) updateEndpoint(ctx context.Context, key string, create bool, change func(*endpointRecord) error) (uint64, error) {
	for range casAttempts {
		rec, rev, err := d.getRecord(ctx, key)
		switch {
		case errors.Is(err, ErrEndpointNotFound) && create:
			rec = &endpointRecord{}
		case err != nil:
			return 0, err
		case !rec.Removed.IsZero() && !create:
			return 0, ErrEndpointNotFound // only a creation sees a removed endpoint
		}
		if err := change(rec); errors.Is(err, errUnchanged) {
			return 0, nil
		} else if err != nil {
			return 0, err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return 0, fmt.Errorf("encode endpoint %s: %w", key, err)
		}
		var written uint64
		if rev == 0 {
			written, err = d.endpoints.Create(ctx, key, data)
		} else {
			written, err = d.endpoints.Update(ctx, key, data, rev)
		}
		if err == nil {
			return written, nil
		}
		if !isConflict(err) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("update endpoint %s: %w", key, errTooManyWrites)
}

// mirrorWait bounds how long an administrative change waits for this process's mirror.
const mirrorWait = 2 * time.Second

// change applies an administrative change and waits until this process's mirror shows it, so
// that a change made right after Register returns is delivered by a dispatcher of the same
// process. Dispatchers of other processes see it a moment later.
func (r *Registry) change(ctx context.Context, key string, create bool, change func(*endpointRecord) error) error {
	rev, err := r.d.updateEndpoint(ctx, key, create, change)
	if err != nil {
		return err
	}
	r.d.mirror.catchUp(ctx, rev, mirrorWait)
	return nil
}

// isConflict reports a failed KV compare-and-set.
func isConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
