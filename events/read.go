package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumerInactiveThreshold is how long the server keeps a reader's consumer once nobody pulls
// from it. Readers stop without deleting their consumer; the server removes it after this.
const consumerInactiveThreshold = 10 * time.Second

// History returns every record of one establishment, oldest first, as of the call. It returns no
// records, and no error, for an establishment without any.
func (s *Store) History(ctx context.Context, slug string) ([]Record, error) {
	subject, err := Subject(slug)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	last, err := s.lastSequence(ctx, subject)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", subject, err)
	}
	var records []Record
	_, err = s.consume(ctx, subject, 1, last, false, func(r Record) error {
		records = append(records, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", subject, err)
	}
	return records, nil
}

// Replay calls fn, in order, for every record of the log whose sequence is at least from, up to
// the last record stored when Replay was called. It stops at the first error of fn and returns
// it wrapped.
//
// last is the sequence of the last record fn accepted, or from-1 when it accepted none: passing
// last+1 to Follow continues without a gap or a repeat.
func (s *Store) Replay(ctx context.Context, from uint64, fn func(Record) error) (last uint64, err error) {
	from = max(from, 1)
	info, err := s.stream.Info(ctx)
	if err != nil {
		return from - 1, fmt.Errorf("replay %s: %w", StreamName, err)
	}
	last, err = s.consume(ctx, "", from, info.State.LastSeq, false, fn)
	if err != nil {
		return last, fmt.Errorf("replay %s: %w", StreamName, err)
	}
	return last, nil
}

// Follow calls fn, in order, for every record of the log whose sequence is at least from, then
// for each new record as it is stored, until ctx is done or fn fails. It returns ctx.Err() or
// fn's error wrapped.
func (s *Store) Follow(ctx context.Context, from uint64, fn func(Record) error) error {
	_, err := s.consume(ctx, "", max(from, 1), 0, true, fn)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("follow %s: %w", StreamName, err)
	}
	return nil
}

// consume passes to fn the records on subject (the whole stream when empty) from sequence from
// up to sequence last, or, when follow is set, until ctx is done. It returns the sequence of the
// last record fn accepted, or from-1.
func (s *Store) consume(ctx context.Context, subject string, from, last uint64, follow bool, fn func(Record) error) (uint64, error) {
	done := from - 1
	if !follow && last < from {
		return done, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	}
	if subject != "" {
		cfg.FilterSubjects = []string{subject}
	}
	err := s.each(ctx, cfg, follow, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		rec, err := decodeMsg(msg, meta)
		if err != nil {
			return true, err
		}
		if !follow && rec.Sequence > last {
			return true, nil
		}
		if err := fn(rec); err != nil {
			return true, fmt.Errorf("seq %d: %w", rec.Sequence, err)
		}
		done = rec.Sequence
		return !follow && done >= last, nil
	})
	return done, err
}

// each reads the stream with an ordered consumer configured by cfg and passes every message to
// fn, until fn asks to stop or fails, or ctx is done. Unless follow is set, it also returns once
// the consumer has nothing more to deliver, without waiting for new messages.
func (s *Store) each(ctx context.Context, cfg jetstream.OrderedConsumerConfig, follow bool, fn func(jetstream.Msg, *jetstream.MsgMetadata) (stop bool, err error)) error {
	cfg.InactiveThreshold = consumerInactiveThreshold
	cons, err := s.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("create consumer: %w", err)
	}
	if info := cons.CachedInfo(); !follow && info != nil && info.NumPending == 0 {
		return nil
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	defer it.Stop()
	// Next honours ctx, but a consumer being re-created after a reconnect only stops with it.
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()

	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				err = ctx.Err()
			}
			return fmt.Errorf("read messages: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read messages: %s: %w", msg.Subject(), err)
		}
		finished, err := fn(msg, meta)
		if err != nil || finished || (!follow && meta.NumPending == 0) {
			return err
		}
	}
}

// decodeMsg returns the record in msg, with its sequence.
func decodeMsg(msg jetstream.Msg, meta *jetstream.MsgMetadata) (Record, error) {
	seq := meta.Sequence.Stream
	rec, err := Decode(msg.Data())
	if err != nil {
		return Record{}, fmt.Errorf("%s seq %d: %w", msg.Subject(), seq, err)
	}
	if slug := strings.TrimPrefix(msg.Subject(), subjectPrefix); rec.Establishment != slug {
		return Record{}, fmt.Errorf("%s seq %d: %w: establishment %q does not match the subject",
			msg.Subject(), seq, ErrInvalidRecord, rec.Establishment)
	}
	rec.Sequence = seq
	return rec, nil
}
