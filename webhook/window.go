package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// window is the merged state of one establishment's open debounce window. It is the body of the
// window's scheduled message, replaced at every merge, and of the message fired when it closes.
type window struct {
	Establishment string    `json:"establishment"`
	Revision      int64     `json:"content_revision"`
	Resources     []string  `json:"resources"`
	Opened        time.Time `json:"opened"`
	Due           time.Time `json:"due"`
	LastChange    time.Time `json:"last_change"`
	Signals       int       `json:"signals"`
}

// stepTimeout bounds the NATS work of handling one signal or one closed window.
const stepTimeout = 20 * time.Second

// requestTimeout bounds each NATS request of a step. A reply lost with a server (stopped while
// the request was on its way to it, or to the stream leader behind it) costs this, and the step
// is tried again a second later (retryStep) on the servers left.
const requestTimeout = 5 * time.Second

// stepContext bounds a step to limit by cancelling it then, without a deadline: the JetStream
// client applies its own request timeout (requestTimeout) only to a context without one, so
// that each request of the step keeps it. With a deadline, a lost reply would hold the step,
// and what waits on it, until the limit.
func stepContext(parent context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	timer := time.AfterFunc(limit, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// handleSignal adds a change signal to its establishment's open window, or opens one. It does
// so whether or not the establishment has endpoints: those are looked up when the window closes,
// so an endpoint registered during the window, in this process or another, gets it.
//
// A window is two things on the webhook stream. The signals it gathers are messages of their own
// on "webhook.pending.<slug>", appended and never rewritten. The window itself is a scheduled
// message on "webhook.window.<slug>", created by the first signal only (expected last sequence
// 0), that fires once, at the window's end, as "webhook.due.<slug>" and is then purged by the
// server. The handler of the due message reads the pending signals, queues the deliveries and
// only then drops the signals it read. So a signal is either read by a closing window or finds
// no window and opens the next one: the server creates the due message and purges the schedule
// in one step, and the due handler reads only after that step.
func (d *Dispatcher) handleSignal(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := stepContext(parent, stepTimeout)
	defer cancel()
	sig, err := events.DecodeSignal(msg.Data())
	if err != nil {
		d.term(msg, "undecodable signal", err)
		return
	}
	if err := d.touchPlatform(ctx); err != nil {
		d.nakLater(msg, "open the platform window", err)
		return
	}
	if sig.Transition != "" {
		// An establishment that started or stopped being served without a new revision: the
		// establishment's webhook announces revisions only.
		if err := msg.Ack(); err != nil {
			d.logger.Warn("webhook: ack signal", "establishment", sig.Establishment, "err", err)
		}
		return
	}
	if err := d.addToWindow(ctx, sig, msg.Data()); err != nil {
		d.nakLater(msg, "add signal to window", err)
		return
	}
	if err := msg.Ack(); err != nil {
		d.logger.Warn("webhook: ack signal", "establishment", sig.Establishment, "err", err)
	}
}

// addToWindow appends the encoded signal sig to the pending signals of its establishment and
// makes sure a window is open. The append is deduplicated on the signal's id, so a signal handled
// twice (after a failed acknowledgement) is counted once.
func (d *Dispatcher) addToWindow(ctx context.Context, sig events.Signal, data []byte) error {
	m := nats.NewMsg(subjPending + sig.Establishment)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, "pending-"+events.SignalID(sig))
	if _, err := d.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("append signal to %s: %w", m.Subject, err)
	}
	_, err := d.openWindow(ctx, sig.Establishment)
	return err
}

// openWindow creates the window of slug, closing after the configured duration, unless one is
// open already.
func (d *Dispatcher) openWindow(ctx context.Context, slug string) (opened bool, err error) {
	now := d.cfg.Now().UTC()
	w := window{Establishment: slug, Opened: now, Due: now.Add(d.cfg.Window)}
	data, err := json.Marshal(w)
	if err != nil {
		return false, err
	}
	m := nats.NewMsg(subjWindow + slug)
	m.Data = data
	m.Header.Set(jetstream.ScheduleHeader, "@at "+w.Due.Format(time.RFC3339Nano))
	m.Header.Set(jetstream.ScheduleTargetHeader, subjDue+slug)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	_, err = d.js.PublishMsg(ctx, m)
	switch {
	case isConflict(err): // a window is open and will read the signal
		return false, nil
	case err != nil:
		return false, fmt.Errorf("open window %s: %w", m.Subject, err)
	}
	return true, nil
}

// maxWindowSignals bounds the signals one closing window reads, and so the time it takes (a
// dispatcher back after a long stop may find a large backlog): the rest stay pending and the
// next window, opened at once, reads them.
var maxWindowSignals = 5000

// closeWindow merges the pending signals of the closed window w into it. It returns the merged
// window and the sequences of the signals read, in order, none when there was none; the caller
// drops them (dropSignals) once the deliveries are queued.
func (d *Dispatcher) closeWindow(ctx context.Context, w window) (window, []uint64, error) {
	subject := subjPending + w.Establishment
	last, err := d.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return w, nil, nil
	}
	if err != nil {
		return w, nil, fmt.Errorf("read signals %s: %w", subject, err)
	}
	if only, err := d.onlyPending(ctx, subject); err != nil {
		return w, nil, err
	} else if only {
		d.mergeSignal(&w, subject, last)
		return w, []uint64{last.Sequence}, nil
	}
	var read []uint64
	for next := uint64(1); len(read) < maxWindowSignals && next <= last.Sequence; {
		m, err := d.stream.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && m.Sequence > last.Sequence {
			break
		}
		if err != nil {
			return w, nil, fmt.Errorf("read signals %s from %d: %w", subject, next, err)
		}
		read, next = append(read, m.Sequence), m.Sequence+1
		d.mergeSignal(&w, subject, m)
	}
	return w, read, nil
}

// onlyPending says whether the pending signals on subject are one alone, the usual window's: the
// last, which the server finds at once. To read from the first, it would look for the subject's
// first message through the blocks the drops of its earlier windows left behind, loading each:
// milliseconds a window once the stream is large. The count is the server's, kept per subject.
func (d *Dispatcher) onlyPending(ctx context.Context, subject string) (bool, error) {
	info, err := d.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return false, fmt.Errorf("count signals %s: %w", subject, err)
	}
	return info.State.Subjects[subject] == 1, nil
}

// mergeSignal merges the pending signal m into w, or skips it when it cannot be decoded.
func (d *Dispatcher) mergeSignal(w *window, subject string, m *jetstream.RawStreamMsg) {
	sig, err := events.DecodeSignal(m.Data)
	if err != nil {
		d.logger.Warn("webhook: skip undecodable signal", "subject", subject, "seq", m.Sequence, "err", err)
		return
	}
	*w = w.merge(sig)
}

// maxDeletes bounds the signals dropSignals deletes one at a time.
var maxDeletes = 64

// dropSignals drops the pending signals of slug a closing window read, seqs in order, then opens
// the next window if signals came after them, in case none did it. Up to maxDeletes, each is
// deleted on its own: the server tells every consumer of the stream of one message gone, where a
// purge of more than one has it count again the pending messages of each, which takes longer the
// more establishments the stream holds signals of. Beyond, one purge does it.
func (d *Dispatcher) dropSignals(ctx context.Context, slug string, seqs []uint64) error {
	subject := subjPending + slug
	if len(seqs) > maxDeletes {
		err := d.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(seqs[len(seqs)-1]+1))
		if err != nil {
			return fmt.Errorf("purge signals %s: %w", subject, err)
		}
	} else {
		for _, seq := range seqs {
			if err := d.deleteSignal(ctx, seq); err != nil {
				return fmt.Errorf("delete signal %d of %s: %w", seq, subject, err)
			}
		}
	}
	switch _, err := d.stream.GetLastMsgForSubject(ctx, subject); {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read signals %s: %w", subject, err)
	}
	_, err := d.openWindow(ctx, slug)
	return err
}

// deleteSignal deletes the signal at seq, unless it is gone already: a window handled again
// after a failure drops again what it had dropped.
func (d *Dispatcher) deleteSignal(ctx context.Context, seq uint64) error {
	err := d.stream.DeleteMsg(ctx, seq)
	if err == nil {
		return nil
	}
	if _, gerr := d.stream.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
		return nil
	}
	return err
}

// merge returns w with sig added: the newest revision and the union of resources. The due time
// stays: a window is fixed, not sliding, so a stream of changes still yields a delivery per
// window.
func (w window) merge(sig events.Signal) window {
	if sig.Revision > w.Revision {
		w.Revision = sig.Revision
	}
	w.Resources = events.MergeResources(w.Resources, sig.Resources)
	if sig.Time.After(w.LastChange) {
		w.LastChange = sig.Time
	}
	w.Signals++
	return w
}
