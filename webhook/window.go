package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// stepTimeout bounds the NATS work of handling one signal or one closed window.
const stepTimeout = 20 * time.Second

// handleSignal merges a change signal into its establishment's open window, or opens one. It
// does so whether or not the establishment has endpoints: those are looked up when the window
// closes, so an endpoint registered during the window, in this process or another, gets it.
//
// The open window is a scheduled message on "webhook.window.<slug>" that fires once, at the
// window's end, as "webhook.due.<slug>". Its body is the merged state, replaced at every merge
// with a compare-and-set on the subject's last sequence: a merge that races with the firing
// finds the subject empty and opens the next window instead, so no signal is lost or counted
// twice into one delivery.
func (d *Dispatcher) handleSignal(parent context.Context, msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(parent, stepTimeout)
	defer cancel()
	sig, err := events.DecodeSignal(msg.Data())
	if err != nil {
		d.term(msg, "undecodable signal", err)
		return
	}
	if err := d.mergeIntoWindow(ctx, sig); err != nil {
		d.nakLater(msg, "merge signal into window", err)
		return
	}
	if err := msg.Ack(); err != nil {
		d.logger.Warn("webhook: ack signal", "establishment", sig.Establishment, "err", err)
	}
}

func (d *Dispatcher) mergeIntoWindow(ctx context.Context, sig events.Signal) error {
	subject := subjWindow + sig.Establishment
	for try := range casAttempts {
		now := d.cfg.Now().UTC()
		w := window{
			Establishment: sig.Establishment,
			Revision:      sig.Revision,
			Resources:     mergeResources(sig.Resources),
			Opened:        now,
			Due:           now.Add(d.cfg.Window),
			LastChange:    sig.Time,
			Signals:       1,
		}
		var expect uint64
		if try > 0 { // the first try assumes no open window, the common case
			last, err := d.stream.GetLastMsgForSubject(ctx, subject)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
			case err != nil:
				return fmt.Errorf("read window %s: %w", subject, err)
			default:
				open, err := decodeJSON[window](last.Data)
				if err != nil {
					return fmt.Errorf("decode window %s: %w", subject, err)
				}
				w = open.merge(sig)
				expect = last.Sequence
			}
		}
		err := d.publishWindow(ctx, subject, w, expect)
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("publish window %s: %w", subject, err)
		}
	}
	return fmt.Errorf("publish window %s: too many concurrent merges", subject)
}

// merge returns w with sig added: the newest revision and the union of resources. The due time
// stays: a window is fixed, not sliding, so a stream of changes still yields a delivery per
// window.
func (w window) merge(sig events.Signal) window {
	if sig.Revision > w.Revision {
		w.Revision = sig.Revision
	}
	w.Resources = mergeResources(w.Resources, sig.Resources)
	if sig.Time.After(w.LastChange) {
		w.LastChange = sig.Time
	}
	w.Signals++
	return w
}

// publishWindow stores w as the schedule of subject, if the subject's last sequence is expect.
// The schedule fires at w.Due, to the nanosecond, as a message on the window's due subject with
// the same body. The server replaces the previous schedule of the subject (a roll-up).
func (d *Dispatcher) publishWindow(ctx context.Context, subject string, w window, expect uint64) error {
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(jetstream.ScheduleHeader, "@at "+w.Due.UTC().Format(time.RFC3339Nano))
	m.Header.Set(jetstream.ScheduleTargetHeader, subjDue+w.Establishment)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	_, err = d.js.PublishMsg(ctx, m)
	return err
}
