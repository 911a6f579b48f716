package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/events"
)

// handleDue fans a closed window out: one queued delivery per enabled endpoint of the
// establishment. Each delivery lists the window's resources, plus those of the endpoint's
// delivery still queued or retrying (which the new one supersedes) and those of deliveries it
// gave up on, so a receiver always learns everything that changed since it last said 2xx.
func (d *Dispatcher) handleDue(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := stepContext(parent, stepTimeout)
	defer cancel()
	w, err := decodeJSON[window](msg.Data())
	if err != nil || checkKeyPart(w.Establishment) != nil {
		d.term(msg, "undecodable window", err)
		return
	}
	if w.Establishment == PlatformScope {
		d.handlePlatformDue(ctx, msg)
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		d.term(msg, "window without metadata", err)
		return
	}
	w, read, err := d.closeWindow(ctx, w)
	if err != nil {
		d.nakLater(msg, "read window", err)
		return
	}
	var lastRead uint64
	if len(read) > 0 {
		lastRead = read[len(read)-1]
	}
	now := d.cfg.Now().UTC()
	if w.Signals > 0 {
		dedupe := "due-" + strconv.FormatUint(meta.Sequence.Stream, 10) + "-" + strconv.FormatUint(lastRead, 10)
		for _, ep := range d.mirror.endpoints(w.Establishment) {
			if ep.Disabled {
				// Kept for the delivery that follows its re-enabling.
				if err := d.noteMissed(ctx, ep, w.Revision, w.Resources); err != nil {
					d.nakLater(msg, "note changes missed by a disabled endpoint", err)
					return
				}
				continue
			}
			if err := d.enqueue(ctx, w, ep, dedupe, now); err != nil {
				d.nakLater(msg, "queue delivery", err) // queued ones are deduplicated next time
				return
			}
		}
	}
	if len(read) > 0 {
		if err := d.dropSignals(ctx, w.Establishment, read); err != nil {
			d.nakLater(msg, "drop the window's signals", err)
			return
		}
	}
	if err := msg.Ack(); err != nil {
		d.logger.Warn("webhook: ack window", "establishment", w.Establishment, "err", err)
	}
}

// enqueue publishes one delivery of window w to endpoint ep. Its message id is dedupe and the
// endpoint's id; handleDue derives dedupe from the window message's sequence and the last signal
// read into w, so handling the same window again queues nothing new unless signals came since. The queue
// keeps one message per endpoint: the new delivery replaces the previous one, which, if it was
// not finished, is marked superseded and its resources carried over.
func (d *Dispatcher) enqueue(ctx context.Context, w window, ep *endpointRecord, dedupe string, now time.Time) error {
	subject := subjTask + endpointKey(ep.Establishment, ep.ID)
	resources, revision := w.Resources, w.Revision
	last, prev, prevRec, prevRev, err := d.unfinished(ctx, subject, ep.ID)
	if err != nil {
		return err
	}
	if last != nil {
		// Revisions an endpoint is told never go back, even when signals of one establishment,
		// handled concurrently, reach their windows out of order.
		revision = max(revision, last.Revision)
	}
	if prev != nil {
		resources = events.MergeResources(resources, prev.Resources)
	}
	var missedGen uint64
	if ep.Missed != nil {
		resources = events.MergeResources(resources, ep.Missed.Resources)
		revision = max(revision, ep.Missed.Revision)
		missedGen = ep.Missed.Gen
	}
	id := newDeliveryID(now)
	body, err := encodeBody(Payload{
		ID:        id,
		Type:      EventContentUpdated,
		Timestamp: now,
		Data:      PayloadData{Establishment: w.Establishment, Revision: revision, Resources: resources},
	})
	if err != nil {
		return err
	}
	t := task{
		ID: id, Type: EventContentUpdated, Endpoint: ep.ID, Establishment: ep.Establishment,
		Revision: revision, Resources: resources, CreatedAt: now, MissedGen: missedGen, Payload: body,
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	msgID := dedupe + "-" + ep.ID
	ack, err := d.js.Publish(ctx, subject, data, jetstream.WithMsgID(msgID))
	if err != nil {
		return fmt.Errorf("queue delivery %s: %w", subject, err)
	}
	if prev == nil || ack.Duplicate {
		return nil
	}
	key := deliveryKey(ep.ID, prev.ID)
	err = d.saveDelivery(ctx, key, prevRec, prevRev, *prev, func(r *Delivery) {
		if !r.Status.final() {
			r.Status, r.Note, r.NextAttemptAt = StatusSuperseded, "superseded by "+id, time.Time{}
		}
	})
	if err != nil {
		d.logger.Warn("webhook: mark delivery superseded", "delivery", prev.ID, "err", err)
	}
	return nil
}

// unfinished returns the last delivery queued on subject, if any, and that same delivery again
// if it is not finished yet, with its log record (a new one if it was never attempted) and the
// record's revision.
func (d *Dispatcher) unfinished(ctx context.Context, subject, endpointID string) (last, prev *task, rec *Delivery, rev uint64, err error) {
	m, err := d.queue.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("read queued delivery %s: %w", subject, err)
	}
	t, err := decodeJSON[task](m.Data)
	if err != nil {
		return nil, nil, nil, 0, nil // unreadable: its handler terminates it
	}
	rec, rev, err = d.getDelivery(ctx, deliveryKey(endpointID, t.ID))
	switch {
	case errors.Is(err, ErrDeliveryNotFound):
		return &t, &t, newDelivery(t), 0, nil
	case err != nil:
		return nil, nil, nil, 0, err
	case rec.Status.final():
		return &t, nil, nil, 0, nil
	}
	return &t, &t, rec, rev, nil
}
