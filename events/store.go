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

// StreamName is the JetStream stream that holds the event log.
const StreamName = "CONTENT"

// subjectPrefix starts every establishment subject: "events.<slug>".
const subjectPrefix = "events."

// DefaultDuplicates is the deduplication window used when Config.Duplicates is zero: within it, a
// command id that is appended again is recognised and not stored twice.
const DefaultDuplicates = time.Hour

// clockSkewMargin widens the time range searched for a duplicate beyond the Duplicates window,
// which the server measures with its own clock.
const clockSkewMargin = time.Minute

// maxReplicas is the largest replica count JetStream accepts for a stream.
const maxReplicas = 5

// Retries of a publish refused because the same command id is being stored by another request.
const (
	inProcessAttempts  = 12
	inProcessFirstWait = 5 * time.Millisecond
	inProcessMaxWait   = 250 * time.Millisecond
)

// codeDuplicateInProcess is the server's answer while a replicated stream is storing a message
// with the same id and does not know its sequence yet (nats.go has no constant for it).
const codeDuplicateInProcess jetstream.ErrorCode = 10158

// Subject returns the subject of an establishment's records, "events.<slug>". The slug must be
// one subject token: non-empty, without '.', '*', '>', white space or control characters. The
// error matches ErrInvalidSlug.
func Subject(slug string) (string, error) {
	if err := checkSubjectToken(slug); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSlug, err)
	}
	return subjectPrefix + slug, nil
}

// Config sets up the stream. The zero value is valid: one replica, file storage and a
// DefaultDuplicates window.
type Config struct {
	// Replicas is the number of copies of the stream in a cluster, 1 to 5; zero means 1.
	Replicas int
	// Duplicates is how long a command id is remembered for deduplication; zero means
	// DefaultDuplicates.
	Duplicates time.Duration
	// MemoryStorage keeps the log in memory instead of files. It is meant for tests and demos:
	// the log does not survive a restart.
	MemoryStorage bool
}

// Validate reports a setting JetStream would refuse.
func (c Config) Validate() error {
	var errs []error
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("replicas %d is outside 0 to %d", c.Replicas, maxReplicas))
	}
	if c.Duplicates < 0 {
		errs = append(errs, fmt.Errorf("duplicates window %s is negative", c.Duplicates))
	}
	return errors.Join(errs...)
}

func (c Config) stream() jetstream.StreamConfig {
	sc := jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Event log: one record per accepted command, one subject per establishment.",
		Subjects:    []string{subjectPrefix + "*"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    max(c.Replicas, 1),
		Duplicates:  c.Duplicates,
		DenyDelete:  true,
		DenyPurge:   true,
		// Reading one establishment's records is a direct get per record, answered without
		// the JetStream API queue and without creating a consumer.
		AllowDirect: true,
	}
	if sc.Duplicates == 0 {
		sc.Duplicates = DefaultDuplicates
	}
	if c.MemoryStorage {
		sc.Storage = jetstream.MemoryStorage
	}
	return sc
}

// Store appends records to the event log and reads them back. It is safe for concurrent use.
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

// Open creates the stream, or updates an existing one to cfg, and returns a Store using nc. The
// Store does not own nc: the caller closes it.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	if nc == nil {
		return nil, fmt.Errorf("open stream %s: nil connection", StreamName)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open stream %s: %w", StreamName, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", StreamName, err)
	}
	stream, err := js.CreateOrUpdateStream(ctx, cfg.stream())
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", StreamName, err)
	}
	return &Store{nc: nc, js: js, stream: stream}, nil
}

// Bind returns a Store using nc on the stream as it exists, changing nothing of it: for a reader
// (verify, say) that must not reconfigure a log others write.
func Bind(ctx context.Context, nc *nats.Conn) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bind stream %s: %w", StreamName, err)
	}
	stream, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, fmt.Errorf("bind stream %s: %w", StreamName, err)
	}
	return &Store{nc: nc, js: js, stream: stream}, nil
}

// AppendOption sets an optional part of an appended record.
type AppendOption func(*appendOptions)

type appendOptions struct {
	headers map[string]string
}

// WithHeader attaches a header to the record's message: a small fact about the record that a
// reader of headers only (FollowHeaders) can use without reading the record. name must not start
// with "Nats-", which JetStream reserves; value is one line of visible text.
func WithHeader(name, value string) AppendOption {
	return func(o *appendOptions) {
		if o.headers == nil {
			o.headers = map[string]string{}
		}
		o.headers[name] = value
	}
}

// recordHeaderRoom is what Append keeps of the connection's maximum payload for the headers of
// a record message (message id, expected sequence).
const recordHeaderRoom = 1 << 10

// Append stores the events of one command as one record on the establishment's subject, if the
// last record on that subject has sequence expected (0: none yet). It returns the record's
// sequence once JetStream has acknowledged it.
//
// Empty Envelope.ID fields become "<commandID>/<index>" and empty Envelope.Establishment fields
// become slug; the caller's slice is not modified.
//
// When the subject's last sequence is not expected, the error matches ErrConflict and nothing is
// stored. When a record with commandID was stored within the stream's Duplicates window, Append
// stores nothing and returns that record's sequence with an error matching ErrDuplicate, whatever
// expected is: a command replayed after a lost acknowledgement is recognised as applied. Invalid
// input matches ErrInvalidSlug or ErrInvalidRecord, and a record over the connection's maximum
// payload ErrRecordTooLarge. Any other error leaves the outcome unknown:
// retrying with the same command id is safe.
func (s *Store) Append(ctx context.Context, slug string, expected uint64, commandID string, events []Envelope, opts ...AppendOption) (uint64, error) {
	subject, err := Subject(slug)
	if err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	rec := Record{CommandID: commandID, Establishment: slug, Events: make([]Envelope, len(events))}
	for i, e := range events {
		if e.ID == "" {
			e.ID = commandID + "/" + strconv.Itoa(i)
		}
		if e.Establishment == "" {
			e.Establishment = slug
		}
		rec.Events[i] = e
	}
	data, err := Encode(rec)
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", subject, err)
	}
	if limit := s.nc.MaxPayload() - recordHeaderRoom; int64(len(data)) > limit {
		return 0, fmt.Errorf("append %s: %w: %d bytes, at most %d", subject, ErrRecordTooLarge, len(data), limit)
	}

	var o appendOptions
	for _, opt := range opts {
		opt(&o)
	}
	ack, err := s.publish(ctx, subject, data, commandID, expected, o.headers)
	switch {
	case err == nil && ack.Duplicate:
		return ack.Sequence, fmt.Errorf("append %s: command %s: %w", subject, commandID, ErrDuplicate)
	case err == nil:
		return ack.Sequence, nil
	case !hasCode(err, jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return 0, fmt.Errorf("append %s: %w", subject, StorageFull(err))
	}

	// A single server checks the expected sequence before the message id, so a command replayed
	// with a stale expectation is refused as a conflict: look for its record before saying so.
	seq, found, err := s.findCommand(ctx, subject, commandID)
	switch {
	case err != nil:
		return 0, fmt.Errorf("append %s: wrong last sequence, looking for command %s: %w", subject, commandID, err)
	case found:
		return seq, fmt.Errorf("append %s: command %s: %w", subject, commandID, ErrDuplicate)
	default:
		return 0, fmt.Errorf("append %s: expected last sequence %d: %w", subject, expected, ErrConflict)
	}
}

// publish sends one record with its command id and expectation. While a replicated stream is
// still storing another copy of the same command, it waits and tries again, so that the caller
// learns the copy's sequence.
func (s *Store) publish(ctx context.Context, subject string, data []byte, commandID string, expected uint64, headers map[string]string) (*jetstream.PubAck, error) {
	wait := inProcessFirstWait
	for attempt := 1; ; attempt++ {
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		for k, v := range headers {
			msg.Header.Set(k, v)
		}
		ack, err := s.js.PublishMsg(ctx, msg,
			jetstream.WithMsgID(commandID),
			jetstream.WithExpectLastSequencePerSubject(expected),
		)
		if !hasCode(err, codeDuplicateInProcess) || attempt == inProcessAttempts {
			return ack, err
		}
		if serr := Sleep(ctx, wait); serr != nil {
			return nil, errors.Join(err, serr)
		}
		wait = min(2*wait, inProcessMaxWait)
	}
}

// maxDuplicateScan bounds the records Append reads after a conflict to look for its command.
const maxDuplicateScan = 4 * readBatch

// findCommand looks for the record of commandID among the records on subject that JetStream
// may still deduplicate: those stored within the stream's Duplicates window, plus a margin for
// clock skew between this process and the server, read with batched direct gets from the first
// one stored since then. It reads at most maxDuplicateScan records: a command further back is
// not found, Append reports a conflict, and the caller's retry on fresh state is recognised by
// JetStream itself, whose expectation check then passes before its duplicate check.
func (s *Store) findCommand(ctx context.Context, subject, commandID string) (uint64, bool, error) {
	window := DefaultDuplicates
	if info := s.stream.CachedInfo(); info != nil && info.Config.Duplicates > 0 {
		window = info.Config.Duplicates
	}
	since := time.Now().Add(-window - clockSkewMargin)
	var seq uint64
	read := 0
	err := s.walk(ctx, subject, jetstreamext.GetBatchStartTime(since), true, 0, func(msg *jetstream.RawStreamMsg) (bool, error) {
		read++
		if msg.Header.Get(jetstream.MsgIDHeader) == commandID {
			seq = msg.Sequence
			return true, nil
		}
		return read >= maxDuplicateScan, nil
	})
	return seq, seq != 0, err
}

// LastSequence returns the sequence of the establishment's last record, or 0 if it has none: the
// expected value for its next Append.
func (s *Store) LastSequence(ctx context.Context, slug string) (uint64, error) {
	subject, err := Subject(slug)
	if err != nil {
		return 0, fmt.Errorf("last sequence: %w", err)
	}
	seq, err := s.lastSequence(ctx, subject)
	if err != nil {
		return 0, fmt.Errorf("last sequence %s: %w", subject, err)
	}
	return seq, nil
}

func (s *Store) lastSequence(ctx context.Context, subject string) (uint64, error) {
	msg, err := s.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return msg.Sequence, nil
}

// LastStreamSequence returns the sequence of the last record of the whole log, 0 when empty.
func (s *Store) LastStreamSequence(ctx context.Context) (uint64, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream info %s: %w", StreamName, err)
	}
	return info.State.LastSeq, nil
}

// Placement says which NATS server leads the log's stream and which hold its replicas, for
// operators; both empty on a server without a cluster.
type Placement struct {
	Leader   string   `json:"leader,omitempty"`
	Replicas []string `json:"replicas,omitempty"`
}

// Placement returns where the log's stream is held.
func (s *Store) Placement(ctx context.Context) (Placement, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return Placement{}, fmt.Errorf("stream info %s: %w", StreamName, err)
	}
	var p Placement
	if c := info.Cluster; c != nil {
		p.Leader = c.Leader
		for _, r := range c.Replicas {
			state := r.Name
			if !r.Current {
				state += " (behind)"
			}
			if r.Offline {
				state += " (offline)"
			}
			p.Replicas = append(p.Replicas, state)
		}
	}
	return p, nil
}

// Identity tells this log apart from any other of the same name, one deleted and created again or
// restored from a backup: the stream's name and creation time.
func (s *Store) Identity(ctx context.Context) (string, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("stream info %s: %w", StreamName, err)
	}
	return StreamName + "@" + info.Created.UTC().Format(time.RFC3339Nano), nil
}

// Slugs returns, sorted, the establishments that have at least one record.
func (s *Store) Slugs(ctx context.Context) ([]string, error) {
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(subjectPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("list slugs %s: %w", StreamName, err)
	}
	slugs := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		slugs = append(slugs, strings.TrimPrefix(subject, subjectPrefix))
	}
	slices.Sort(slugs)
	return slugs, nil
}

// hasCode reports whether err carries a JetStream API error with one of codes.
func hasCode(err error, codes ...jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return slices.Contains(codes, apiErr.ErrorCode)
}
