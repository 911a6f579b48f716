package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Note is what a reader of headers only sees of a record: where it is, and the headers its writer
// attached with WithHeader.
type Note struct {
	Sequence      uint64
	Establishment string
	// Time is when the record was stored.
	Time time.Time
	// Header holds the headers attached by the writer, by name; JetStream's own are left out.
	Header map[string]string
}

// Retry delays of a note whose handler failed: doubling from the first, up to the longest.
const (
	noteRetryWait    = time.Second
	noteRetryMaxWait = time.Minute
	noteAckWait      = 30 * time.Second
)

// ErrNoReader reports that the durable reader of notes does not exist (any more): open it again
// with OpenNoteReader.
var ErrNoReader = errors.New("events: no such note reader")

// notePending bounds the notes delivered to a reader and not yet handled.
const notePending = 256

// OpenNoteReader makes sure the durable reader name exists. A reader created now starts after
// the last record stored: created is then true, and the caller is to catch up on the state of
// everything before by other means. An existing reader resumes where it stopped.
func (s *Store) OpenNoteReader(ctx context.Context, name string) (created bool, err error) {
	if _, err := s.stream.Consumer(ctx, name); err == nil {
		return false, nil
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, fmt.Errorf("open note reader %s: %w", name, err)
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("open note reader %s: %w", name, err)
	}
	_, err = s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "Headers of every record, read in order by " + name + ".",
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   info.State.LastSeq + 1,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       noteAckWait,
		MaxAckPending: notePending,
		MaxDeliver:    -1, // a note is never dropped: its handler fails only while a store is out
		HeadersOnly:   true,
		FilterSubject: subjectPrefix + "*",
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return false, nil // another process created it first
	}
	if err != nil {
		return false, fmt.Errorf("open note reader %s: %w", name, err)
	}
	return true, nil
}

// FollowNotes calls fn with the note of every record the durable reader name has not yet seen,
// those stored and those to come, until ctx is done. Up to workers notes are handled at once, so
// notes of one establishment may be handled out of order: fn must not depend on their order. A
// note fn fails on is given again a second later, up to noteMaxDeliver times; several processes
// reading with the same name share the notes, each note going to one of them. It returns ctx's
// error, or the error of reading the log.
func (s *Store) FollowNotes(ctx context.Context, name string, workers int, fn func(Note) error) error {
	cons, err := s.stream.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("follow notes %s: %w", name, ErrNoReader)
	}
	if err != nil {
		return fmt.Errorf("follow notes %s: %w", name, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(notePending))
	if err != nil {
		return fmt.Errorf("follow notes %s: %w", name, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()

	msgs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(msgs)
	for range max(workers, 1) {
		wg.Go(func() {
			for msg := range msgs {
				handleNote(ctx, msg, fn)
			}
		})
	}
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				err = ErrNoReader
			}
			return fmt.Errorf("follow notes %s: %w", name, err)
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handleNote passes the note of msg to fn, and acknowledges it or asks for it again, later each
// time it failed; a panic of fn is a failure.
func handleNote(ctx context.Context, msg jetstream.Msg, fn func(Note) error) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Term()
		return
	}
	note := Note{
		Sequence:      meta.Sequence.Stream,
		Time:          meta.Timestamp,
		Establishment: strings.TrimPrefix(msg.Subject(), subjectPrefix),
		Header:        map[string]string{},
	}
	for k, v := range msg.Headers() {
		if !strings.HasPrefix(k, "Nats-") && len(v) > 0 {
			note.Header[k] = v[0]
		}
	}
	if err := safeCall(fn, note); err != nil {
		if ctx.Err() == nil {
			wait := noteRetryWait << min(meta.NumDelivered-1, 6)
			_ = msg.NakWithDelay(min(wait, noteRetryMaxWait))
		}
		return
	}
	_ = msg.Ack()
}

// safeCall calls fn, turning a panic into an error.
func safeCall(fn func(Note) error, n Note) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("note of %s at %d: panic: %v", n.Establishment, n.Sequence, r)
		}
	}()
	return fn(n)
}

// NotesPending returns how many notes the reader name has yet to handle: those not delivered and
// those delivered but not acknowledged.
func (s *Store) NotesPending(ctx context.Context, name string) (uint64, error) {
	cons, err := s.stream.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, fmt.Errorf("notes pending %s: %w", name, ErrNoReader)
	}
	if err != nil {
		return 0, fmt.Errorf("notes pending %s: %w", name, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("notes pending %s: %w", name, err)
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}
