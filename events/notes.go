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

// Retry delays of a note whose handler failed.
const (
	noteRetryWait = time.Second
	noteAckWait   = 30 * time.Second
)

// notePending bounds the notes delivered to a reader and not yet handled.
const notePending = 256

// noteMaxDeliver bounds the deliveries of a note whose handler keeps failing: past it, the note
// is dropped, and the reader relies on its own retries (the clock's passes) for that record.
const noteMaxDeliver = 20

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
		MaxDeliver:    noteMaxDeliver,
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
			return fmt.Errorf("follow notes %s: %w", name, err)
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handleNote passes the note of msg to fn, and acknowledges it or asks for it again.
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
	if err := fn(note); err != nil {
		if ctx.Err() == nil {
			_ = msg.NakWithDelay(noteRetryWait)
		}
		return
	}
	_ = msg.Ack()
}

// NotesPending returns how many notes the reader name has yet to handle: those not delivered and
// those delivered but not acknowledged.
func (s *Store) NotesPending(ctx context.Context, name string) (uint64, error) {
	cons, err := s.stream.Consumer(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("notes pending %s: %w", name, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("notes pending %s: %w", name, err)
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}
