package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// consumerInactiveThreshold is how long the server keeps a reader's consumer once nobody pulls
// from it: a follower that stops, or a reader stopped before it could delete its consumer, leaves
// it to the server, which removes it after this.
const consumerInactiveThreshold = 10 * time.Second

// History returns every record of one establishment, oldest first, as of the call. It returns no
// records, and no error, for an establishment without any.
func (s *Store) History(ctx context.Context, slug string) ([]Record, error) {
	recs, err := s.Range(ctx, slug, 1, 0)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return recs, nil
}

// Last returns the last record of one establishment; ok is false when it has none.
func (s *Store) Last(ctx context.Context, slug string) (rec Record, ok bool, err error) {
	subject, err := Subject(slug)
	if err != nil {
		return Record{}, false, fmt.Errorf("last record: %w", err)
	}
	msg, err := s.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("last record %s: %w", subject, err)
	}
	rec, err = decodeRaw(msg)
	if err != nil {
		return Record{}, false, fmt.Errorf("last record: %w", err)
	}
	return rec, true, nil
}

// LastHeader returns the sequence of the last record of one establishment, 0 when it has none,
// and the value of that record's header name, empty when it has none: one direct get, nothing
// decoded.
func (s *Store) LastHeader(ctx context.Context, slug, name string) (seq uint64, value string, err error) {
	subject, err := Subject(slug)
	if err != nil {
		return 0, "", fmt.Errorf("last header: %w", err)
	}
	msg, err := s.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("last header %s: %w", subject, err)
	}
	return msg.Sequence, msg.Header.Get(name), nil
}

// Range returns the records of one establishment whose sequences lie from from through to (0: up
// to its last record), oldest first, as of the call. It reads them with batched direct gets of
// the establishment's subject: no consumer, so any number of establishments can be read at once,
// and one request for up to readBatch records.
func (s *Store) Range(ctx context.Context, slug string, from, to uint64) ([]Record, error) {
	return s.records(ctx, slug, from, to, to, nil)
}

// Before returns the records of one establishment from sequence from up to, not including, its
// record at sequence before, oldest first, read as Range reads them; before must be the sequence
// of one of its records, or the read ends as incomplete. The record at before is fetched, as the
// end of the walk, but not decoded. A message that is not a readable record (ErrInvalidRecord) is
// passed to unreadable and over, or, when unreadable is nil, is an error.
func (s *Store) Before(ctx context.Context, slug string, from, before uint64, unreadable func(seq uint64, err error)) ([]Record, error) {
	from = max(from, 1)
	if from >= before {
		return nil, nil
	}
	return s.records(ctx, slug, from, before, before-1, unreadable)
}

// records returns the records of one establishment from sequence from up to last, walking up to
// to, the sequence of one of its records (0: its last). An unreadable message is an error, or,
// when unreadable is not nil, passed to it and over.
func (s *Store) records(ctx context.Context, slug string, from, to, last uint64, unreadable func(seq uint64, err error)) ([]Record, error) {
	subject, err := Subject(slug)
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	var recs []Record
	err = s.walk(ctx, subject, jetstreamext.GetBatchSeq(max(from, 1)), false, to, func(msg *jetstream.RawStreamMsg) (bool, error) {
		if last != 0 && msg.Sequence > last {
			return true, nil
		}
		rec, err := decodeRaw(msg)
		switch {
		case err != nil && unreadable != nil:
			unreadable(msg.Sequence, err)
		case err != nil:
			return true, err
		default:
			recs = append(recs, rec)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read records %s: %w", subject, err)
	}
	return recs, nil
}

// maxChain bounds the records Chain reads one by one; more are read in batches.
const maxChain = 32

// Chain returns the records of one establishment after sequence after up to and including its
// record at sequence last, oldest first, read from last back through each record's Previous: one
// direct get by sequence each. However far apart they lie in the log, nothing else is read, where
// a read under the establishment's subject (Before) has the server match it in every block in
// between, loading each. ok is false, and nothing is returned, when a record on the way does not
// know its previous one or cannot be decoded, when the records from last back do not reach after
// (after is neither one of them nor 0, before the first), or when more than maxChain would be
// read: Before reads them.
// When last is after, there is nothing to read: ok, and none.
func (s *Store) Chain(ctx context.Context, slug string, after, last uint64) (recs []Record, ok bool, err error) {
	subject, err := Subject(slug)
	if err != nil {
		return nil, false, fmt.Errorf("read records: %w", err)
	}
	for seq := last; seq != after; {
		if seq < after || len(recs) == maxChain {
			return nil, false, nil
		}
		msg, err := s.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read record %s at %d: %w", subject, seq, err)
		}
		rec, err := decodeRaw(msg)
		if err != nil || msg.Subject != subject || !rec.PreviousKnown || rec.Previous >= seq {
			return nil, false, nil
		}
		recs = append(recs, rec)
		seq = rec.Previous
	}
	slices.Reverse(recs)
	return recs, true, nil
}

// readBatch is how many messages one direct get request returns at most.
const readBatch = 256

// errIncompleteRead reports a batch of direct gets that brought nothing before the sequence it
// was to reach: a request that timed out, a connection lost, or a replica behind the leader.
var errIncompleteRead = errors.New("read ended early")

// readAttempts is how many times a batch that brings nothing is asked again before a read is
// incomplete: under load a server can take longer to answer than the client waits (its request
// timeout when the context has no deadline), and asking again from the same sequence is safe.
const readAttempts = 3

// readBatchBytes bounds the bytes one direct get request brings: the replies of a batch arrive in
// one burst, and the server drops a connection whose pending replies pass its limit (64 MiB by
// default) whatever else the connection carries.
const readBatchBytes = 512 << 10

// walk passes to fn, in order, the messages on subject from the start that start gives up to
// sequence to, until fn asks to stop or fails. to is the sequence of a message on subject, or 0
// for the last message on subject when walk is called. Since the log never loses a message, a
// walk from a sequence that does not reach to was cut short, and is an error; a walk from a time
// (fromTime) may also find nothing at all since then.
func (s *Store) walk(ctx context.Context, subject string, start jetstreamext.GetBatchOpt, fromTime bool, to uint64, fn func(*jetstream.RawStreamMsg) (stop bool, err error)) error {
	if to == 0 {
		last, err := s.lastSequence(ctx, subject)
		if err != nil || last == 0 {
			return err
		}
		to = last
	}
	return walkStream(ctx, s.js, StreamName, subject, start, fromTime, to, fn)
}

// walkStream is walk on any stream: it passes to fn, in order, the messages of stream on subject
// (every message when subject is "") from start up to sequence to, which must not be 0.
func walkStream(ctx context.Context, js jetstream.JetStream, stream, subject string, start jetstreamext.GetBatchOpt, fromTime bool, to uint64, fn func(*jetstream.RawStreamMsg) (stop bool, err error)) error {
	var seen uint64
	for attempt := 1; ; {
		opts := []jetstreamext.GetBatchOpt{start, jetstreamext.GetBatchMaxBytes(readBatchBytes)}
		if subject != "" {
			opts = append(opts, jetstreamext.GetBatchSubject(subject))
		}
		msgs, err := jetstreamext.GetBatch(ctx, js, stream, readBatch, opts...)
		if err != nil {
			return err
		}
		n, none := 0, false
		for msg, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				none = true // the server's answer, not a request that timed out
				break
			}
			if err != nil {
				return err
			}
			if msg.Sequence > to {
				return nil
			}
			if stop, err := fn(msg); err != nil || stop {
				return err
			}
			n, seen = n+1, msg.Sequence
			if seen == to {
				return nil
			}
		}
		if n == 0 {
			if fromTime && seen == 0 && none {
				return nil // nothing on subject since that time
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if attempt < readAttempts && !none {
				attempt++
				continue // unanswered: the same batch again
			}
			return fmt.Errorf("%w: at sequence %d of %d (%d attempts)", errIncompleteRead, seen, to, readAttempts)
		}
		// A batch ends at its count or its byte limit: go on after what it brought.
		start, attempt = jetstreamext.GetBatchSeq(seen+1), 1
	}
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
	last, err = s.consume(ctx, from, info.State.LastSeq, false, nil, nil, nil, fn)
	if err != nil {
		return last, fmt.Errorf("replay %s: %w", StreamName, err)
	}
	return last, nil
}

// ReplayPart calls fn, in order, for the records of the log from sequence from through to whose
// establishment keep accepts. The others are passed over without being decoded, or, when other is
// not nil, given to it, in order, as they are stored: the establishment, the sequence and the
// message's data, which DecodeRecord turns into the record. A kept message that is not a readable
// record (ErrInvalidRecord) is passed to unreadable and over, or, when unreadable is nil, ends the
// replay with its error. It stops at the first error of fn or other and returns it wrapped.
func (s *Store) ReplayPart(ctx context.Context, from, to uint64, keep func(slug string) bool, fn func(Record) error, other func(slug string, seq uint64, data []byte) error, unreadable func(seq uint64, err error)) error {
	if _, err := s.consume(ctx, max(from, 1), to, false, keep, other, unreadable, fn); err != nil {
		return fmt.Errorf("replay %s: %w", StreamName, err)
	}
	return nil
}

// Follow calls fn, in order, for every record of the log whose sequence is at least from, then
// for each new record as it is stored, until ctx is done or fn fails. It returns ctx.Err(), fn's
// error wrapped, or ErrStalled wrapped when its consumer delivered nothing for a few seconds
// while records waited: the caller follows again from the record after the last fn accepted.
func (s *Store) Follow(ctx context.Context, from uint64, fn func(Record) error) error {
	from = max(from, 1)
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var w stallWatch
	w.received.Store(from - 1)
	go w.run(fctx, s.stream, func() { cancel(ErrStalled) })
	_, err := s.consume(fctx, from, 0, true, nil, nil, nil, func(rec Record) error {
		defer w.receive(rec.Sequence)()
		return fn(rec)
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(context.Cause(fctx), ErrStalled):
		return fmt.Errorf("follow %s: %w", StreamName, ErrStalled)
	case err != nil:
		return fmt.Errorf("follow %s: %w", StreamName, err)
	}
	return nil
}

// consume passes to fn the records of the log from sequence from up to sequence last, or, when
// follow is set, until ctx is done. When keep is not nil, the records of the establishments it
// refuses are passed over undecoded, or to other when it is not nil; when unreadable is not nil,
// it is told of a message that is not a readable record, which is passed over instead of ending
// the read with its error. It returns the sequence of the last record fn accepted, or from-1.
func (s *Store) consume(ctx context.Context, from, last uint64, follow bool, keep func(slug string) bool, other func(slug string, seq uint64, data []byte) error, unreadable func(seq uint64, err error), fn func(Record) error) (uint64, error) {
	done := from - 1
	if !follow && last < from {
		return done, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	}
	err := s.each(ctx, cfg, follow, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		seq := meta.Sequence.Stream
		if !follow && seq > last {
			return true, nil
		}
		slug := strings.TrimPrefix(msg.Subject(), subjectPrefix)
		kept := keep == nil || keep(slug)
		switch {
		case !kept && other != nil:
			if err := other(slug, seq, msg.Data()); err != nil {
				return true, fmt.Errorf("seq %d: %w", seq, err)
			}
		case kept:
			rec, err := decodeMsg(msg, meta)
			switch {
			case err != nil && unreadable != nil:
				unreadable(seq, err)
			case err != nil:
				return true, err
			default:
				if err := fn(rec); err != nil {
					return true, fmt.Errorf("seq %d: %w", seq, err)
				}
				done = seq
			}
		}
		return !follow && seq >= last, nil
	})
	return done, err
}

// each reads the stream with an ordered consumer configured by cfg and passes every message to
// fn, until fn asks to stop or fails, or ctx is done. Unless follow is set, it also returns once
// the consumer has nothing more to deliver, without waiting for new messages.
func (s *Store) each(ctx context.Context, cfg jetstream.OrderedConsumerConfig, follow bool, fn func(jetstream.Msg, *jetstream.MsgMetadata) (stop bool, err error)) error {
	return eachMsg(ctx, s.stream, cfg, follow, fn)
}

// eachMsg is Store.each on any stream.
func eachMsg(ctx context.Context, stream jetstream.Stream, cfg jetstream.OrderedConsumerConfig, follow bool, fn func(jetstream.Msg, *jetstream.MsgMetadata) (stop bool, err error)) error {
	cfg.InactiveThreshold = consumerInactiveThreshold
	cons, err := stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoConsumer, err)
	}
	if !follow {
		// A read that is done deletes its consumer rather than leave it to the server for the
		// inactivity threshold: the consumers a stream shows are then those of live readers.
		defer func() {
			// A read ended by ctx leaves it to the server: the connection may be closing.
			if info := cons.CachedInfo(); info != nil && ctx.Err() == nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_ = stream.DeleteConsumer(dctx, info.Name)
			}
		}()
	}
	if info := cons.CachedInfo(); !follow && info != nil && info.NumPending == 0 {
		return nil
	}
	// Heartbeats every second: a consumer lost with its server (a restart, a node gone) is
	// noticed and made again within seconds rather than at the default half minute.
	it, err := cons.Messages(jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second))
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

// decodeRaw returns the record in a message read by a direct get, with its sequence and previous
// record.
func decodeRaw(msg *jetstream.RawStreamMsg) (Record, error) {
	rec, err := decodeData(msg.Subject, msg.Sequence, msg.Data)
	rec.Previous, rec.PreviousKnown = previousOf(msg.Header)
	return rec, err
}

// decodeMsg returns the record in msg, with its sequence and previous record.
func decodeMsg(msg jetstream.Msg, meta *jetstream.MsgMetadata) (Record, error) {
	rec, err := decodeData(msg.Subject(), meta.Sequence.Stream, msg.Data())
	rec.Previous, rec.PreviousKnown = previousOf(msg.Headers())
	return rec, err
}

// previousOf returns the sequence of the record before a record with headers h, which its append
// expected; known is false when h holds no such expectation.
func previousOf(h nats.Header) (seq uint64, known bool) {
	v := h.Get(jetstream.ExpectedLastSubjSeqHeader)
	if v == "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	return seq, err == nil
}

// decodeData decodes the record stored at sequence seq on subject.
func decodeData(subject string, seq uint64, data []byte) (Record, error) {
	return DecodeRecord(strings.TrimPrefix(subject, subjectPrefix), seq, data)
}

// DecodeRecord decodes the record stored at sequence seq as data on the subject of establishment
// slug, as ReplayPart gives it to its other function. A message that is not a record of that
// establishment is an ErrInvalidRecord.
func DecodeRecord(slug string, seq uint64, data []byte) (Record, error) {
	rec, err := Decode(data)
	if err != nil {
		return Record{}, fmt.Errorf("%s%s seq %d: %w", subjectPrefix, slug, seq, err)
	}
	if rec.Establishment != slug {
		return Record{}, fmt.Errorf("%s%s seq %d: %w: establishment %q does not match the subject",
			subjectPrefix, slug, seq, ErrInvalidRecord, rec.Establishment)
	}
	rec.Sequence = seq
	return rec, nil
}

// ReadStream reads what stream holds, with an ordered consumer configured by cfg, passing every
// message to fn until fn fails, ctx is done or the consumer has nothing more to deliver. Its
// consumer is deleted once the read is done.
func ReadStream(ctx context.Context, stream jetstream.Stream, cfg jetstream.OrderedConsumerConfig, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	return eachMsg(ctx, stream, cfg, false, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		return false, fn(msg, meta)
	})
}
