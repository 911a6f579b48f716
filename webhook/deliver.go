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
	From          uint64          `json:"from,omitempty"`       // a platform batch: the signals after From,
	Through       uint64          `json:"through,omitempty"`    // through Through
	Payload       json.RawMessage `json:"payload"`
}

// userAgent identifies deliveries.
const userAgent = "opencarte-publisher-webhook/1"

// maxErrorLen bounds an attempt's error text in the log.
const maxErrorLen = 512

// maxDrain bounds how much of a response body is read, to reuse the connection.
const maxDrain = 64 << 10

// handleTask makes one attempt of a queued delivery and decides what comes next: done, given
// up, superseded, or another attempt after a backoff, which JetStream keeps (a negative
// acknowledgement with a delay), so a retry survives a restart of any dispatcher.
func (d *Dispatcher) handleTask(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := stepContext(parent, d.attemptAckWait())
	defer cancel()
	k, ok := d.takeTask(ctx, msg)
	if !ok {
		return
	}
	// The turn is taken before the check for a newer delivery, so that a delivery superseded
	// while an older attempt to its endpoint was being sent is found superseded.
	release, ok := d.turns.take(ctx, endpointKey(k.t.Establishment, k.t.Endpoint))
	if !ok {
		d.nakLater(msg, "wait for the endpoint's attempt in flight", context.Cause(ctx))
		return
	}
	defer release()
	ep, ok := d.deliverable(ctx, k)
	if !ok {
		return
	}
	n := k.rec.attemptsIn(k.t.Series) + 1
	if n > d.cfg.MaxAttempts { // the last attempt was recorded, then the process stopped
		d.finish(ctx, k, StatusFailed, "")
		if !k.manual && len(k.rec.Attempts) > 0 {
			d.noteOutcome(ctx, ep, k.t, StatusFailed, k.rec.Attempts[len(k.rec.Attempts)-1])
		}
		return
	}
	_ = msg.InProgress()
	a, retryAfter := d.attempt(ctx, ep, k.t.ID, k.t.Payload)
	a.Number, a.Redelivery = n, k.t.Series
	status, delay := d.judge(a, n, retryAfter)
	status, ok = d.recordAttempt(ctx, k, a, status, delay)
	if !ok {
		return
	}
	if d.cfg.OnAttempt != nil {
		d.cfg.OnAttempt(status)
	}
	d.settle(k, a, status, delay)
	if !k.manual || status == StatusEndpointGone {
		d.noteOutcome(ctx, ep, k.t, status, a)
	}
}

// taken is a queued delivery taken to attempt, with its record in the delivery log.
type taken struct {
	msg    jetstream.Msg
	t      task
	seq    uint64 // the message's sequence in the queue
	manual bool   // a manual redelivery, not the endpoint's queued delivery
	key    string // the record's key in the delivery log
	rec    *Delivery
	rev    uint64 // the record's revision, 0 for one not stored yet
}

// takeTask decodes msg and reads the delivery's record; it reports false when msg is settled
// already: undecodable, finished before, or to be asked for again.
func (d *Dispatcher) takeTask(ctx context.Context, msg jetstream.Msg) (*taken, bool) {
	t, err := decodeJSON[task](msg.Data())
	if err != nil || checkEndpointKey(t.Establishment, t.Endpoint) != nil || checkKeyPart(t.ID) != nil {
		d.term(msg, "undecodable delivery", err)
		return nil, false
	}
	meta, err := msg.Metadata()
	if err != nil {
		d.term(msg, "delivery without metadata", err)
		return nil, false
	}
	k := &taken{
		msg: msg, t: t, seq: meta.Sequence.Stream,
		manual: strings.HasPrefix(msg.Subject(), subjManual),
		key:    deliveryKey(t.Endpoint, t.ID),
	}
	// A record exists unless this is the delivery's first try.
	if meta.NumDelivered > 1 || t.Series > 0 {
		k.rec, k.rev, err = d.getDelivery(ctx, k.key)
		if err != nil && !errors.Is(err, ErrDeliveryNotFound) {
			d.nakLater(msg, "read delivery record", err)
			return nil, false
		}
	}
	if k.rec == nil {
		k.rec, k.rev = newDelivery(t), 0
	}
	if k.rec.Redeliveries > t.Series || (k.rec.Redeliveries == t.Series && k.rec.Status.final()) {
		_ = msg.Ack() // already finished, before a crash or a lost acknowledgement, or superseded
		return nil, false
	}
	return k, true
}

// deliverable returns the endpoint k is to be sent to; it reports false when k is finished
// instead: its endpoint removed or disabled, or the delivery superseded.
func (d *Dispatcher) deliverable(ctx context.Context, k *taken) (*endpointRecord, bool) {
	ep, ok := d.mirror.get(k.t.Establishment, k.t.Endpoint)
	switch {
	case !ok:
		d.finish(ctx, k, StatusEndpointRemoved, "")
		return nil, false
	case ep.Disabled:
		d.finish(ctx, k, StatusEndpointDisabled, ep.DisabledReason)
		return nil, false
	}
	if k.manual {
		return ep, true
	}
	// Taken from the queue just before a newer delivery replaced it.
	last, err := d.queue.GetLastMsgForSubject(ctx, k.msg.Subject())
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		d.nakLater(k.msg, "check for a newer delivery", err)
		return nil, false
	}
	if err == nil && last.Sequence > k.seq {
		note := ""
		if newer, err := decodeJSON[task](last.Data); err == nil {
			note = "superseded by " + newer.ID
		}
		d.finish(ctx, k, StatusSuperseded, note)
		return nil, false
	}
	return ep, true
}

// finish records that k ended with status, unless its record is final already, and terminates
// its message.
func (d *Dispatcher) finish(ctx context.Context, k *taken, status Status, note string) {
	err := d.saveDelivery(ctx, k.key, k.rec, k.rev, k.t, func(r *Delivery) {
		if !r.Status.final() {
			r.Status, r.Note, r.NextAttemptAt = status, note, time.Time{}
		}
	})
	if err != nil {
		d.nakLater(k.msg, "record delivery", err)
		return
	}
	if err := k.msg.TermWithReason(string(status)); err != nil {
		d.logger.Warn("webhook: term delivery", "delivery", k.t.ID, "err", err)
	}
}

// judge returns what attempt a, the n-th, makes of its delivery, and the wait before the next
// attempt when there is one.
func (d *Dispatcher) judge(a Attempt, n int, retryAfter time.Duration) (Status, time.Duration) {
	switch {
	case a.ok():
		return StatusDelivered, 0
	case a.StatusCode == http.StatusGone:
		return StatusEndpointGone, 0
	case n >= d.cfg.MaxAttempts:
		return StatusFailed, 0
	default:
		return StatusRetrying, d.retryDelay(n, retryAfter)
	}
}

// recordAttempt stores attempt a and the status it gives k, and returns the status stored: a
// newer delivery may have superseded k during the attempt. It reports false when the record
// could not be written, and k is asked for again.
func (d *Dispatcher) recordAttempt(ctx context.Context, k *taken, a Attempt, status Status, delay time.Duration) (Status, bool) {
	err := d.saveDelivery(ctx, k.key, k.rec, k.rev, k.t, func(r *Delivery) {
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
		d.nakLater(k.msg, "record attempt", err)
		return "", false
	}
	if k.rec.Status != status {
		status = k.rec.Status // superseded
	}
	return status, true
}

// settle acknowledges k's message after attempt a, which gave it status: done, asked for again
// after delay, or terminated.
func (d *Dispatcher) settle(k *taken, a Attempt, status Status, delay time.Duration) {
	var err error
	switch status {
	case StatusDelivered:
		err = k.msg.Ack()
	case StatusRetrying:
		d.logger.Info("webhook attempt failed", "delivery", k.t.ID, "endpoint", k.t.Endpoint,
			"attempt", a.Number, "status", a.StatusCode, "err", a.Error, "retry_in", delay)
		err = k.msg.NakWithDelay(delay)
	default:
		d.logger.Warn("webhook delivery ended", "delivery", k.t.ID, "endpoint", k.t.Endpoint,
			"status", status, "attempts", a.Number, "http_status", a.StatusCode, "err", a.Error)
		err = k.msg.TermWithReason(string(status))
	}
	if err != nil {
		d.logger.Warn("webhook: settle delivery", "delivery", k.t.ID, "status", status, "err", err)
	}
}

// noteOutcome keeps the endpoint's delivery state: failing while a retry is pending, the
// resources of a given-up delivery, disabled after 410 Gone.
func (d *Dispatcher) noteOutcome(ctx context.Context, ep *endpointRecord, t task, status Status, a Attempt) {
	if t.Establishment == PlatformScope {
		if t.Type == EventEstablishmentsUpdated {
			d.notePlatformOutcome(ctx, ep, t, status, a)
		}
		return
	}
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
