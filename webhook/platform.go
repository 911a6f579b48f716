package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// PlatformScope is the scope of platform endpoints, which receive the changes of every
// establishment, or of a list, in batches: it stands where an establishment's slug stands in the
// keys and subjects of the other endpoints, and no slug can be it.
const PlatformScope = "_platform"

// EventEstablishmentsUpdated is the event of a platform delivery: the changes of many
// establishments.
const EventEstablishmentsUpdated = "establishments.content_updated"

// Bounds of a platform endpoint's filter.
const maxPlatformFilter = 10_000

// Defaults of a platform delivery's size: 1,000 establishments, about 150 kB of entries, is
// far below the body limits receivers' frameworks set (1 MiB and more) and sent well within an
// attempt's timeout; a day change that moves 78,000 establishments makes 78 deliveries.
const (
	DefaultPlatformBatch      = 1000
	DefaultPlatformBatchBytes = 256 << 10
)

// PlatformPayload is the body of a platform delivery, described by platform.schema.json.
type PlatformPayload struct {
	ID        string       `json:"id"`
	Type      string       `json:"type"`
	Timestamp time.Time    `json:"timestamp"`
	Data      PlatformData `json:"data"`
}

// PlatformData is the event of a PlatformPayload.
type PlatformData struct {
	// Changes lists each establishment once: its newest revision, the resources that changed
	// since the endpoint's last delivery, and whether it is served.
	Changes []events.Change `json:"changes"`
	// Cursor is the changes feed's position after these changes: a receiver may go on from it
	// with GET /admin/v1/changes.
	Cursor string `json:"cursor"`
	// Gap says that changes before these are no longer kept, and were not delivered (the
	// endpoint was behind for longer than the signals' retention): the receiver resyncs from the
	// changes feed.
	Gap bool `json:"gap,omitempty"`
}

// platformBatch is the delivery a platform endpoint has queued: the signals after From, through
// Through.
type platformBatch struct {
	ID      string `json:"id"`
	From    uint64 `json:"from"`
	Through uint64 `json:"through"`
}

// CreatePlatform stores a new platform endpoint, as Create does an establishment's, receiving
// the changes of the establishments listed (every one, present or future, when none is) made
// after its registration. When the id exists it stores nothing and returns its URL.
func (r *Registry) CreatePlatform(ctx context.Context, id, rawURL, secret string, establishments []string) (existing string, err error) {
	filter, err := platformFilter(establishments)
	if err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", id, err)
	}
	last, err := r.d.sigs.LastSequence(ctx)
	if err != nil {
		return "", fmt.Errorf("register endpoint %s: %w", id, err)
	}
	return r.register(ctx, PlatformScope, id, rawURL, secret, false, func(rec *endpointRecord) {
		rec.Establishments, rec.Cursor, rec.Target = filter, last, last
	})
}

// platformFilter checks a platform endpoint's list of establishments and returns it sorted.
func platformFilter(slugs []string) ([]string, error) {
	if len(slugs) > maxPlatformFilter {
		return nil, fmt.Errorf("%w: establishments: %d, want at most %d", ErrInvalidEndpoint, len(slugs), maxPlatformFilter)
	}
	out := slices.Sorted(slices.Values(slugs))
	for i, s := range out {
		if err := checkKeyPart(s); err != nil || s == PlatformScope {
			return nil, fmt.Errorf("%w: establishments: %q is not a slug", ErrInvalidEndpoint, s)
		}
		if i > 0 && out[i-1] == s {
			return nil, fmt.Errorf("%w: establishments: %q is listed twice", ErrInvalidEndpoint, s)
		}
	}
	return out, nil
}

// platformWindow remembers, as Unix nanoseconds, until when the platform window is known open,
// so that most signals cost no request to open it.
type platformWindow struct{ until atomic.Int64 }

// touchPlatform opens the platform window unless it is known open, when platform endpoints exist.
func (d *Dispatcher) touchPlatform(ctx context.Context) error {
	now := d.cfg.Now()
	if !d.mirror.has(PlatformScope) || now.UnixNano() < d.platform.until.Load() {
		return nil
	}
	opened, err := d.openWindow(ctx, PlatformScope)
	if err != nil {
		return err
	}
	// Known open until a little before its end, as the server's clock times it; when another
	// dispatcher opened it, its end is not known: a second.
	until := now.Add(time.Second)
	if opened {
		until = now.Add(d.cfg.Window * 9 / 10)
	}
	d.platform.until.Store(until.UnixNano())
	return nil
}

// handlePlatformDue closes the platform window: every enabled platform endpoint is to deliver
// the changes up to the last signal, and each that has none queued queues its next batch.
func (d *Dispatcher) handlePlatformDue(ctx context.Context, msg jetstream.Msg) {
	target, err := d.sigs.LastSequence(ctx)
	if err != nil {
		d.nakLater(msg, "read the last signal", err)
		return
	}
	for _, ep := range d.mirror.endpoints(PlatformScope) {
		if ep.Disabled {
			continue
		}
		if err := d.advancePlatform(ctx, ep.ID, target); err != nil {
			d.nakLater(msg, "queue a platform delivery", err)
			return
		}
	}
	if err := msg.Ack(); err != nil {
		d.logger.Warn("webhook: ack platform window", "err", err)
	}
}

// advancePlatform raises the target of platform endpoint id to target, and queues its next batch.
func (d *Dispatcher) advancePlatform(ctx context.Context, id string, target uint64) error {
	err := d.updatePlatform(ctx, id, func(r *endpointRecord) error {
		if r.Target >= target {
			return errUnchanged
		}
		r.Target = target
		return nil
	})
	if err != nil {
		return err
	}
	return d.formBatch(ctx, id) // a removed endpoint: formBatch finds none
}

// maxSkippedPages bounds the pages of other establishments a filtered endpoint passes over in
// one go; the next window goes on.
const maxSkippedPages = 100

// formBatch queues the next batch of platform endpoint id: the changes after its cursor, up to its
// target, unless one is queued already. Pages without a change of its establishments only move
// its cursor.
func (d *Dispatcher) formBatch(ctx context.Context, id string) error {
	key := endpointKey(PlatformScope, id)
	for range maxSkippedPages {
		rec, _, err := d.getEndpoint(ctx, key)
		if errors.Is(err, ErrEndpointNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Batch != nil {
			if rec, err = d.settleBatch(ctx, rec); err != nil || rec == nil || rec.Batch != nil {
				return err
			}
		}
		if rec.Disabled || rec.Cursor >= rec.Target {
			return nil
		}
		page, gap, err := d.platformPage(ctx, rec)
		if err != nil {
			return err
		}
		if len(page.Changes) > 0 || gap {
			return d.queueBatch(ctx, rec, page, gap)
		}
		if page.Next <= rec.Cursor {
			return nil
		}
		if _, err := d.updateEndpoint(ctx, key, false, func(r *endpointRecord) error {
			if r.Cursor != rec.Cursor || r.Batch != nil {
				return errUnchanged
			}
			r.Cursor = page.Next
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// platformPage reads the changes of rec's establishments after its cursor. When they are no
// longer kept (the endpoint was behind for longer than the signals' retention, or the stream was
// made anew), it reads from the first signal kept instead, and reports gap.
func (d *Dispatcher) platformPage(ctx context.Context, rec *endpointRecord) (events.ChangesPage, bool, error) {
	q := events.ChangesQuery{After: rec.Cursor, Until: rec.Target, Limit: d.cfg.PlatformBatch, MaxBytes: d.cfg.PlatformBatchBytes}
	if filter := rec.Establishments; len(filter) > 0 {
		q.Keep = func(slug string) bool { _, ok := slices.BinarySearch(filter, slug); return ok }
	}
	page, err := d.sigs.Changes(ctx, q)
	if !errors.Is(err, events.ErrChangesGone) {
		return page, false, err
	}
	st, err := d.js.Stream(ctx, events.SignalStreamName)
	if err != nil {
		return events.ChangesPage{}, false, fmt.Errorf("stream %s: %w", events.SignalStreamName, err)
	}
	first := st.CachedInfo().State.FirstSeq
	d.logger.Warn("webhook: a platform endpoint was behind the signals kept: its next delivery starts at the first one and says so",
		"endpoint", rec.ID, "cursor", rec.Cursor, "first_kept", first)
	q.After = max(first, 1) - 1
	page, err = d.sigs.Changes(ctx, q)
	return page, true, err
}

// queueBatch queues the delivery of page to platform endpoint rec, then records it as queued.
// Two dispatchers queueing from the same state queue it once (the message id follows the state).
func (d *Dispatcher) queueBatch(ctx context.Context, rec *endpointRecord, page events.ChangesPage, gap bool) error {
	now := d.cfg.Now().UTC()
	id := newDeliveryID(now)
	body, err := encodeBody(PlatformPayload{ID: id, Type: EventEstablishmentsUpdated, Timestamp: now, Data: PlatformData{
		Changes: page.Changes, Cursor: events.Cursor{Signal: page.Next}.String(), Gap: gap,
	}})
	if err != nil {
		return err
	}
	t := task{
		ID: id, Type: EventEstablishmentsUpdated, Endpoint: rec.ID, Establishment: PlatformScope,
		CreatedAt: now, From: rec.Cursor, Through: page.Next, Payload: body,
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	key := endpointKey(PlatformScope, rec.ID)
	msgID := "platform-" + rec.ID + "-" + strconv.FormatUint(rec.Cursor, 10) + "-" + strconv.FormatUint(rec.Formed, 10)
	if _, err := d.js.Publish(ctx, subjTask+key, data, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("queue delivery %s: %w", key, err)
	}
	_, err = d.updateEndpoint(ctx, key, false, func(r *endpointRecord) error {
		if r.Cursor != t.From || r.Batch != nil {
			return errUnchanged // queued by another dispatcher meanwhile
		}
		r.Batch, r.Formed = &platformBatch{ID: id, From: t.From, Through: t.Through}, r.Formed+1
		return nil
	})
	return err
}

// settleBatch applies the outcome of rec's queued batch when its delivery is over but the outcome
// was not recorded (a dispatcher stopped in between), and returns the record as it is then; nil
// when it is gone. A batch still pending or retrying stays.
func (d *Dispatcher) settleBatch(ctx context.Context, rec *endpointRecord) (*endpointRecord, error) {
	del, _, err := d.getDelivery(ctx, deliveryKey(rec.ID, rec.Batch.ID))
	switch {
	case errors.Is(err, ErrDeliveryNotFound):
		// Not attempted yet, unless its message is gone: then it never will be.
		last, err := d.queue.GetLastMsgForSubject(ctx, subjTask+endpointKey(PlatformScope, rec.ID))
		if err == nil && bytes.Contains(last.Data, []byte(`"`+rec.Batch.ID+`"`)) {
			return rec, nil
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, err
		}
		del = &Delivery{Status: StatusFailed}
	case err != nil:
		return nil, err
	case !del.Status.final():
		return rec, nil
	}
	t := task{ID: rec.Batch.ID, From: rec.Batch.From, Through: rec.Batch.Through}
	if err := d.updatePlatform(ctx, rec.ID, platformOutcome(t, del.Status, Attempt{})); err != nil {
		return nil, err
	}
	rec, _, err = d.getEndpoint(ctx, endpointKey(PlatformScope, rec.ID))
	if errors.Is(err, ErrEndpointNotFound) {
		return nil, nil
	}
	return rec, err
}

// updatePlatform applies change to platform endpoint id; one removed meanwhile is no error.
func (d *Dispatcher) updatePlatform(ctx context.Context, id string, change func(*endpointRecord) error) error {
	_, err := d.updateEndpoint(ctx, endpointKey(PlatformScope, id), false, change)
	if errors.Is(err, ErrEndpointNotFound) {
		return nil
	}
	return err
}

// notePlatformOutcome keeps a platform endpoint's position after an attempt of its batch t: a
// success moves its cursor past the batch and queues the next one at once; giving up, or 410,
// leaves the cursor, so that its next batch carries those changes again, merged with newer ones.
func (d *Dispatcher) notePlatformOutcome(ctx context.Context, ep *endpointRecord, t task, status Status, a Attempt) {
	if err := d.updatePlatform(ctx, ep.ID, platformOutcome(t, status, a)); err != nil {
		d.logger.Warn("webhook: update platform endpoint", "endpoint", ep.ID, "status", status, "err", err)
		return
	}
	if status != StatusDelivered {
		return
	}
	if err := d.formBatch(ctx, ep.ID); err != nil {
		// The next window queues it.
		d.logger.Warn("webhook: queue the next platform delivery", "endpoint", ep.ID, "err", err)
	}
}

// platformOutcome is the change of a platform endpoint's record that the outcome status of its
// batch t makes.
func platformOutcome(t task, status Status, a Attempt) func(*endpointRecord) error {
	return func(r *endpointRecord) error {
		done := func() {
			if r.Batch != nil && r.Batch.From == t.From {
				r.Batch = nil
			}
		}
		switch status {
		case StatusDelivered:
			if r.Cursor == t.From {
				r.Cursor = t.Through
			}
			done()
			r.Failing, r.FailingSince, r.LastError = "", time.Time{}, ""
		case StatusRetrying:
			if r.Failing == "" {
				r.FailingSince = a.Time
			}
			r.Failing, r.LastError = t.ID, a.describe()
		case StatusEndpointGone:
			done()
			return disableChange(a.Time, "receiver answered 410 Gone")(r)
		default: // given up, superseded, or the endpoint removed or disabled meanwhile
			done()
			if r.Failing == t.ID {
				r.Failing, r.FailingSince = "", time.Time{}
			}
			if a.Error != "" || a.StatusCode != 0 {
				r.LastError = a.describe()
			}
		}
		return nil
	}
}

// ErrNotLatest refuses the redelivery of a platform endpoint's delivery that is not its latest:
// newer changes were delivered since, and sending older revisions after them would take the
// receiver back.
var ErrNotLatest = errors.New("webhook: not the endpoint's latest delivery; newer changes were delivered since")

// checkPlatformRedelivery refuses the redelivery of rec unless it is its platform endpoint's
// latest delivery of changes.
func (d *Dispatcher) checkPlatformRedelivery(ctx context.Context, rec *Delivery) error {
	if rec.Establishment != PlatformScope || rec.Type != EventEstablishmentsUpdated {
		return nil
	}
	log, err := d.DeliveryLog(ctx, rec.EndpointID, 10)
	if err != nil {
		return err
	}
	for _, l := range log {
		if l.Type == EventEstablishmentsUpdated {
			if l.ID != rec.ID {
				return ErrNotLatest
			}
			return nil
		}
	}
	return nil
}

// enablePlatform clears the batch a platform endpoint had queued when it was disabled and queues
// its next one: what changed while it was disabled, from its cursor.
func (d *Dispatcher) enablePlatform(ctx context.Context, id string) error {
	if err := d.updatePlatform(ctx, id, func(r *endpointRecord) error {
		if r.Batch == nil {
			return errUnchanged
		}
		r.Batch = nil
		return nil
	}); err != nil {
		return err
	}
	last, err := d.sigs.LastSequence(ctx)
	if err != nil {
		return err
	}
	return d.advancePlatform(ctx, id, last)
}
