package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// task is one delivery to one endpoint, as queued in the webhook stream. The dispatcher that
// takes it makes one attempt, then acknowledges, terminates or delays it.
type task struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	Endpoint      string          `json:"endpoint"`
	Establishment string          `json:"establishment"`
	Revision      int64           `json:"content_revision,omitempty"`
	Resources     []string        `json:"resources,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	Series        int             `json:"series,omitempty"`     // 0 for the original delivery, n for the n-th redelivery
	MissedGen     uint64          `json:"missed_gen,omitempty"` // generation of the endpoint's missed resources merged in
	Payload       json.RawMessage `json:"payload"`
}

// userAgent identifies deliveries.
const userAgent = "opencarte-publisher-webhook/1"

// maxErrorLen bounds an attempt's error text in the log.
const maxErrorLen = 512

// maxDrain bounds how much of a response body is read, to reuse the connection.
const maxDrain = 64 << 10

// handleDue fans a closed window out: one queued delivery per enabled endpoint of the
// establishment. Each delivery lists the window's resources, plus those of the endpoint's
// delivery still queued or retrying (which the new one supersedes) and those of deliveries it
// gave up on, so a receiver always learns everything that changed since it last said 2xx.
func (d *Dispatcher) handleDue(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(parent, stepTimeout)
	defer cancel()
	w, err := decodeJSON[window](msg.Data())
	if err != nil || checkKeyPart(w.Establishment) != nil {
		d.term(msg, "undecodable window", err)
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
	now := d.cfg.Now().UTC()
	if w.Signals > 0 {
		dedupe := "due-" + strconv.FormatUint(meta.Sequence.Stream, 10) + "-" + strconv.FormatUint(read, 10)
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
	if read > 0 {
		if err := d.purgeSignals(ctx, w.Establishment, read); err != nil {
			d.nakLater(msg, "purge window", err)
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
		resources = mergeResources(resources, prev.Resources)
	}
	var missedGen uint64
	if ep.Missed != nil {
		resources = mergeResources(resources, ep.Missed.Resources)
		revision = max(revision, ep.Missed.Revision)
		missedGen = ep.Missed.Gen
	}
	id := newDeliveryID(now)
	body, err := encodePayload(Payload{
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

// handleTask makes one attempt of a queued delivery and decides what comes next: done, given
// up, superseded, or another attempt after a backoff, which JetStream keeps (a negative
// acknowledgement with a delay), so a retry survives a restart of any dispatcher.
func (d *Dispatcher) handleTask(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(parent, d.attemptAckWait())
	defer cancel()
	t, err := decodeJSON[task](msg.Data())
	if err != nil || checkEndpointKey(t.Establishment, t.Endpoint) != nil || checkKeyPart(t.ID) != nil {
		d.term(msg, "undecodable delivery", err)
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		d.term(msg, "delivery without metadata", err)
		return
	}
	manual := strings.HasPrefix(msg.Subject(), subjManual)
	logKey := deliveryKey(t.Endpoint, t.ID)

	// A record exists unless this is the delivery's first try.
	var rec *Delivery
	var rev uint64
	if meta.NumDelivered > 1 || t.Series > 0 {
		rec, rev, err = d.getDelivery(ctx, logKey)
		if err != nil && !errors.Is(err, ErrDeliveryNotFound) {
			d.nakLater(msg, "read delivery record", err)
			return
		}
	}
	if rec == nil {
		rec, rev = newDelivery(t), 0
	}
	if rec.Redeliveries > t.Series || (rec.Redeliveries == t.Series && rec.Status.final()) {
		_ = msg.Ack() // already finished, before a crash or a lost acknowledgement, or superseded
		return
	}

	finish := func(status Status, note string) {
		err := d.saveDelivery(ctx, logKey, rec, rev, t, func(r *Delivery) {
			if !r.Status.final() {
				r.Status, r.Note, r.NextAttemptAt = status, note, time.Time{}
			}
		})
		if err != nil {
			d.nakLater(msg, "record delivery", err)
			return
		}
		if err := msg.TermWithReason(string(status)); err != nil {
			d.logger.Warn("webhook: term delivery", "delivery", t.ID, "err", err)
		}
	}

	ep, ok := d.mirror.get(t.Establishment, t.Endpoint)
	switch {
	case !ok:
		finish(StatusEndpointRemoved, "")
		return
	case ep.Disabled:
		finish(StatusEndpointDisabled, ep.DisabledReason)
		return
	}
	if !manual {
		// Taken from the queue just before a newer delivery replaced it.
		last, err := d.queue.GetLastMsgForSubject(ctx, msg.Subject())
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			d.nakLater(msg, "check for a newer delivery", err)
			return
		}
		if err == nil && last.Sequence > meta.Sequence.Stream {
			note := ""
			if newer, err := decodeJSON[task](last.Data); err == nil {
				note = "superseded by " + newer.ID
			}
			finish(StatusSuperseded, note)
			return
		}
	}

	n := rec.attemptsIn(t.Series) + 1
	if n > d.cfg.MaxAttempts { // the last attempt was recorded, then the process stopped
		finish(StatusFailed, "")
		if !manual && len(rec.Attempts) > 0 {
			d.noteOutcome(ctx, ep, t, StatusFailed, rec.Attempts[len(rec.Attempts)-1])
		}
		return
	}
	_ = msg.InProgress()
	a, retryAfter := d.attempt(ctx, ep, t.ID, t.Payload)
	a.Number, a.Redelivery = n, t.Series

	var (
		status Status
		delay  time.Duration
	)
	switch {
	case a.ok():
		status = StatusDelivered
	case a.StatusCode == http.StatusGone:
		status = StatusEndpointGone
	case n >= d.cfg.MaxAttempts:
		status = StatusFailed
	default:
		status = StatusRetrying
		delay = d.retryDelay(n, retryAfter)
	}
	err = d.saveDelivery(ctx, logKey, rec, rev, t, func(r *Delivery) {
		r.appendAttempt(a)
		if r.Status == StatusSuperseded && status != StatusDelivered && status != StatusEndpointGone {
			return // a newer delivery replaced this one during the attempt
		}
		r.Status, r.Note, r.NextAttemptAt = status, "", time.Time{}
		if delay > 0 {
			r.NextAttemptAt = a.Time.Add(delay)
		}
	})
	if err != nil {
		// The attempt happened but is not recorded: retry soon rather than lose track of it.
		d.nakLater(msg, "record attempt", err)
		return
	}
	if rec.Status != status {
		status = rec.Status // superseded
	}
	if d.cfg.OnAttempt != nil {
		d.cfg.OnAttempt(status)
	}

	switch status {
	case StatusDelivered:
		err = msg.Ack()
	case StatusRetrying:
		d.logger.Info("webhook attempt failed", "delivery", t.ID, "endpoint", t.Endpoint,
			"attempt", n, "status", a.StatusCode, "err", a.Error, "retry_in", delay)
		err = msg.NakWithDelay(delay)
	default:
		d.logger.Warn("webhook delivery ended", "delivery", t.ID, "endpoint", t.Endpoint,
			"status", status, "attempts", n, "http_status", a.StatusCode, "err", a.Error)
		err = msg.TermWithReason(string(status))
	}
	if err != nil {
		d.logger.Warn("webhook: settle delivery", "delivery", t.ID, "status", status, "err", err)
	}
	if !manual || status == StatusEndpointGone {
		d.noteOutcome(ctx, ep, t, status, a)
	}
}

// noteOutcome keeps the endpoint's delivery state: failing while a retry is pending, the
// resources of a given-up delivery, disabled after 410 Gone.
func (d *Dispatcher) noteOutcome(ctx context.Context, ep *endpointRecord, t task, status Status, a Attempt) {
	key := endpointKey(ep.Establishment, ep.ID)
	var change func(*endpointRecord) error
	switch status {
	case StatusDelivered:
		if ep.Failing == "" && (ep.Missed == nil || ep.Missed.Gen != t.MissedGen) {
			return // nothing to clear, as far as the mirror knows
		}
		change = func(r *endpointRecord) error {
			if r.Failing == "" && (r.Missed == nil || r.Missed.Gen != t.MissedGen) {
				return errUnchanged
			}
			r.Failing, r.FailingSince, r.LastError = "", time.Time{}, ""
			if r.Missed != nil && r.Missed.Gen == t.MissedGen {
				r.Missed = nil
			}
			return nil
		}
	case StatusRetrying:
		change = func(r *endpointRecord) error {
			if r.Failing == "" {
				r.FailingSince = a.Time
			}
			r.Failing, r.LastError = t.ID, a.describe()
			return nil
		}
	case StatusFailed:
		change = func(r *endpointRecord) error {
			r.Missed = r.Missed.add(t.Revision, t.Resources)
			if r.Failing == t.ID {
				r.Failing, r.FailingSince = "", time.Time{}
			}
			r.LastError = a.describe()
			return nil
		}
	case StatusEndpointGone:
		disable := disableChange(a.Time, "receiver answered 410 Gone")
		change = func(r *endpointRecord) error {
			// What this delivery carried is told after the endpoint is enabled again.
			r.Missed = r.Missed.add(t.Revision, t.Resources)
			if err := disable(r); err != nil && !errors.Is(err, errUnchanged) {
				return err
			}
			return nil
		}
	default:
		return
	}
	if _, err := d.updateEndpoint(ctx, key, false, change); err != nil && !errors.Is(err, ErrEndpointNotFound) {
		d.logger.Warn("webhook: update endpoint state", "endpoint", key, "status", status, "err", err)
	}
}

// noteMissed adds a change to the missed changes of endpoint ep, which its next delivery lists:
// ep was disabled when the change's window closed.
func (d *Dispatcher) noteMissed(ctx context.Context, ep *endpointRecord, revision int64, resources []string) error {
	_, err := d.updateEndpoint(ctx, endpointKey(ep.Establishment, ep.ID), false, func(r *endpointRecord) error {
		r.Missed = r.Missed.add(revision, resources)
		return nil
	})
	if errors.Is(err, ErrEndpointNotFound) {
		return nil // removed meanwhile
	}
	return err
}

func disableChange(now time.Time, reason string) func(*endpointRecord) error {
	return func(r *endpointRecord) error {
		if r.Disabled {
			return errUnchanged
		}
		r.Disabled, r.DisabledReason, r.DisabledAt = true, reason, now
		r.Failing, r.FailingSince = "", time.Time{}
		return nil
	}
}

// retryDelay is the wait after failed attempt n: the backoff with jitter, lengthened to what
// the receiver asked with Retry-After, within MaxRetryAfter.
func (d *Dispatcher) retryDelay(n int, retryAfter time.Duration) time.Duration {
	base := d.cfg.backoff(n)
	delay := base
	if j := d.cfg.Jitter; j > 0 {
		delay = time.Duration(float64(base) * (1 + j*(2*rand.Float64()-1)))
	}
	if retryAfter > 0 {
		delay = max(delay, min(retryAfter, d.cfg.MaxRetryAfter))
	}
	return max(delay, time.Millisecond)
}

// attempt sends one signed POST of body to ep and reports how it went, with the wait a 429 or
// 503 response asked for. The error of a failed attempt is in the Attempt.
func (d *Dispatcher) attempt(ctx context.Context, ep *endpointRecord, id string, body []byte) (Attempt, time.Duration) {
	now := d.cfg.Now().UTC()
	a := Attempt{Time: now}
	fail := func(err error) (Attempt, time.Duration) {
		a.Error = truncate(err.Error(), maxErrorLen)
		return a, 0
	}
	u, err := url.Parse(ep.URL)
	if err != nil || u.Scheme != "https" {
		return fail(fmt.Errorf("%w: url is not https", ErrInvalidEndpoint))
	}
	keys, err := d.keys(ctx, ep, now)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(HeaderServiceSignature, serviceSignature(keys, ts, body))
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, standardSignature(keys, id, ts, body))

	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		a.Latency = time.Since(start)
		return fail(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	a.Latency = time.Since(start)
	a.StatusCode = resp.StatusCode
	var retryAfter time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	if !a.ok() {
		a.Error = "http status " + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			a.Error += ", redirect not followed"
		}
	}
	return a, retryAfter
}

// parseRetryAfter reads a Retry-After value, in seconds or as an HTTP date; 0 when absent or
// unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(maxBackoff/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxBackoff)
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// publishManual queues a redelivery; its message id makes a repeated request queue it once.
func (d *Dispatcher) publishManual(ctx context.Context, t task) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	m := nats.NewMsg(subjManual + endpointKey(t.Establishment, t.Endpoint) + "." + t.ID)
	m.Data = data
	_, err = d.js.PublishMsg(ctx, m, jetstream.WithMsgID(t.ID+"-"+strconv.Itoa(t.Series)))
	return err
}
