package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SignalStreamName is the JetStream stream of change signals: one message per rise of an
// establishment's content_revision, and per time it starts or stops being served without one,
// published once every document of that revision is stored.
const SignalStreamName = "SIGNALS"

// signalSubjectPrefix starts every signal subject: "signals.<slug>".
const signalSubjectPrefix = "signals."

// SignalSubjects is the subject filter that matches every signal.
const SignalSubjects = signalSubjectPrefix + "*"

// SignalMaxAge is how long a signal stays in its stream. Consumers that are down for longer lose
// the signals that aged out; the content itself is never lost, since receivers re-read the API.
const SignalMaxAge = 7 * 24 * time.Hour

// Bounds of a signal's resource list.
const (
	maxSignalResources   = 1024
	maxSignalResourceLen = 256
)

// ErrInvalidSignal reports a signal that Publish refuses to send and DecodeSignal refuses to read.
var ErrInvalidSignal = errors.New("events: invalid signal")

// Signal says that an establishment's public content reached a new content_revision, or that it
// started or stopped being served (Transition). The projector emits it only after every document
// of that revision is stored, so a receiver that re-reads the API right away gets that revision or
// a newer one.
type Signal struct {
	// Establishment is the establishment's slug.
	Establishment string `json:"establishment"`
	// Revision is the new content_revision.
	Revision int64 `json:"content_revision"`
	// Resources names the resources whose bytes changed: "establishment", "hours", "menus",
	// "menus/<menu_type_slug>" for each menu detail that changed, appeared or disappeared, and
	// "jsonld".
	Resources []string `json:"resources"`
	// Time is when the revision was stored.
	Time time.Time `json:"time"`
	// Unserved is true when the read API does not serve the establishment at this revision: it is
	// in draft, or its API is disabled.
	Unserved bool `json:"unserved,omitempty"`
	// Transition is "" for a content change, a rise of content_revision while the establishment is
	// public: the signals the establishment's own webhook delivers. It is TransitionUnserved or
	// TransitionServed when the establishment stopped or started being served without such a
	// rise; Resources then lists every resource it had or has.
	Transition string `json:"transition,omitempty"`
	// Stored is the sequence, in the stream of the bucket of bundles, of the write that stored this
	// state; 0 when unknown (a rebuild's announcements, signals written before it was recorded).
	Stored uint64 `json:"stored,omitempty"`
}

// Transitions of a Signal that is not a content change.
const (
	TransitionUnserved = "unserved"
	TransitionServed   = "served"
)

// Validate reports every field that would make the signal unusable, matching ErrInvalidSignal.
func (s Signal) Validate() error {
	var errs []error
	if err := checkSubjectToken(s.Establishment); err != nil {
		errs = append(errs, fmt.Errorf("establishment: %w", err))
	}
	if s.Revision < 1 {
		errs = append(errs, fmt.Errorf("content_revision %d: want at least 1", s.Revision))
	}
	switch n := len(s.Resources); {
	case n == 0:
		errs = append(errs, errors.New("resources: empty"))
	case n > maxSignalResources:
		errs = append(errs, fmt.Errorf("resources: %d, want at most %d", n, maxSignalResources))
	}
	switch {
	case s.Transition == TransitionUnserved && !s.Unserved, s.Transition == TransitionServed && s.Unserved:
		errs = append(errs, fmt.Errorf("transition %q contradicts unserved %t", s.Transition, s.Unserved))
	case s.Transition != "" && s.Transition != TransitionUnserved && s.Transition != TransitionServed:
		errs = append(errs, fmt.Errorf("transition %q: want %q, %q or none", s.Transition, TransitionUnserved, TransitionServed))
	}
	for i, r := range s.Resources {
		if err := checkResource(r); err != nil {
			errs = append(errs, fmt.Errorf("resources[%d]: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSignal, err)
	}
	return nil
}

func checkResource(r string) error {
	if r == "" || len(r) > maxSignalResourceLen {
		return fmt.Errorf("length %d: want 1 to %d bytes", len(r), maxSignalResourceLen)
	}
	if !utf8.ValidString(r) {
		return fmt.Errorf("%q is not valid utf-8", r)
	}
	if strings.IndexFunc(r, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0 {
		return fmt.Errorf("%q contains white space or a control character", r)
	}
	return nil
}

// SignalSubject returns the subject of an establishment's signals, "signals.<slug>". The error
// matches ErrInvalidSlug.
func SignalSubject(slug string) (string, error) {
	if err := checkSubjectToken(slug); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSlug, err)
	}
	return signalSubjectPrefix + slug, nil
}

// SignalID is the message id of a signal, "<slug>:<revision>": the stream stores a revision's
// signal once even when the projector emits it again after a restart. A transition, which keeps
// the revision, is "<slug>:<revision>:<transition>:<stored>", one per write of the bundle.
func SignalID(s Signal) string {
	id := s.Establishment + ":" + strconv.FormatInt(s.Revision, 10)
	if s.Transition != "" {
		id += ":" + s.Transition + ":" + strconv.FormatUint(s.Stored, 10)
	}
	return id
}

// EncodeSignal returns the JSON form of a valid signal.
func EncodeSignal(s Signal) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSignal, err)
	}
	return data, nil
}

// DecodeSignal reads a signal written by EncodeSignal and checks it. Unknown fields are ignored,
// so signals written by a newer version stay readable.
func DecodeSignal(data []byte) (Signal, error) {
	var s Signal
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return Signal{}, fmt.Errorf("%w: %w", ErrInvalidSignal, err)
	}
	if err := s.Validate(); err != nil {
		return Signal{}, err
	}
	return s, nil
}

// Signals publishes change signals to the SIGNALS stream. It is safe for concurrent use.
type Signals struct {
	js     jetstream.JetStream
	stream jetstream.Stream
}

// OpenSignals creates the SIGNALS stream, or updates an existing one, with the given number of
// replicas (zero means 1), and returns a Signals using nc. The caller keeps ownership of nc. An
// existing stream keeps its retention; a new one keeps signals SignalMaxAge.
func OpenSignals(ctx context.Context, nc *nats.Conn, replicas int) (*Signals, error) {
	return OpenSignalsFor(ctx, nc, replicas, 0)
}

// OpenSignalsFor is OpenSignals keeping signals for maxAge, which is also how far back the
// changes feed reaches; 0 keeps an existing stream's retention, or SignalMaxAge for a new one.
func OpenSignalsFor(ctx context.Context, nc *nats.Conn, replicas int, maxAge time.Duration) (*Signals, error) {
	if maxAge < 0 {
		return nil, fmt.Errorf("open stream %s: retention %v is negative", SignalStreamName, maxAge)
	}
	if nc == nil {
		return nil, fmt.Errorf("open stream %s: nil connection", SignalStreamName)
	}
	if replicas < 0 || replicas > maxReplicas {
		return nil, fmt.Errorf("open stream %s: replicas %d is outside 0 to %d", SignalStreamName, replicas, maxReplicas)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", SignalStreamName, err)
	}
	if maxAge == 0 {
		maxAge = SignalMaxAge
		if st, err := js.Stream(ctx, SignalStreamName); err == nil {
			maxAge = st.CachedInfo().Config.MaxAge
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("open stream %s: %w", SignalStreamName, err)
		}
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        SignalStreamName,
		Description: "Change signals: one message per rise of an establishment's content_revision.",
		Subjects:    []string{SignalSubjects},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      maxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		Duplicates:  DefaultDuplicates,
		AllowDirect: true, // the changes feed reads it with batched direct gets
	})
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", SignalStreamName, err)
	}
	return &Signals{js: js, stream: stream}, nil
}

// BindSignals returns a Signals on the existing SIGNALS stream, which it neither creates nor
// changes. The caller keeps ownership of nc.
func BindSignals(ctx context.Context, nc *nats.Conn) (*Signals, error) {
	if nc == nil {
		return nil, fmt.Errorf("bind stream %s: nil connection", SignalStreamName)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bind stream %s: %w", SignalStreamName, err)
	}
	stream, err := js.Stream(ctx, SignalStreamName)
	if err != nil {
		return nil, fmt.Errorf("bind stream %s: %w", SignalStreamName, err)
	}
	return &Signals{js: js, stream: stream}, nil
}

// LastSequence returns the sequence of the last signal stored, 0 when none ever was.
func (p *Signals) LastSequence(ctx context.Context) (uint64, error) {
	info, err := p.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", SignalStreamName, err)
	}
	return info.State.LastSeq, nil
}

// Last returns the last signal of the establishment slug that the stream still holds, or a zero
// Signal when it holds none.
func (p *Signals) Last(ctx context.Context, slug string) (Signal, error) {
	subject, err := SignalSubject(slug)
	if err != nil {
		return Signal{}, err
	}
	m, err := p.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Signal{}, nil
	}
	if err != nil {
		return Signal{}, fmt.Errorf("last signal of %s: %w", slug, err)
	}
	s, err := DecodeSignal(m.Data)
	if err != nil {
		return Signal{}, fmt.Errorf("last signal of %s: %w", slug, err)
	}
	return s, nil
}

// Lasts calls fn with the last signal the stream holds of each establishment that has one, in
// one read of the stream's last message per subject: what Last says of each, for all of them at
// once, a last signal that cannot be decoded counting as a zero Signal of its establishment. fn
// may be called more than once for one establishment (a signal stored during the read, a
// consumer made again after a lost connection): the last call holds.
func (p *Signals) Lasts(ctx context.Context, fn func(Signal)) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{SignalSubjects},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}
	err := eachMsg(ctx, p.stream, cfg, false, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		s, err := DecodeSignal(msg.Data())
		if err != nil {
			s = Signal{}
		}
		s.Establishment = strings.TrimPrefix(msg.Subject(), signalSubjectPrefix)
		fn(s)
		return meta.NumPending == 0, nil
	})
	if err != nil {
		return fmt.Errorf("last signals: %w", err)
	}
	return nil
}

// Retries of a signal publish that failed, for instance during a leader election.
const (
	signalAttempts  = 5
	signalFirstWait = 100 * time.Millisecond
)

// Publish stores a signal once JetStream acknowledges it, retrying a few times (about 1.5 s in
// all) when NATS does not answer. A zero Time becomes the current time. The message id is
// SignalID(s): publishing the same establishment and revision again within DefaultDuplicates
// stores nothing and is not an error.
func (p *Signals) Publish(ctx context.Context, s Signal) error {
	if s.Time.IsZero() {
		s.Time = time.Now()
	}
	s.Time = s.Time.UTC()
	data, err := EncodeSignal(s)
	if err != nil {
		return fmt.Errorf("publish signal: %w", err)
	}
	subject := signalSubjectPrefix + s.Establishment
	wait := signalFirstWait
	for attempt := 1; ; attempt++ {
		_, err := p.js.Publish(ctx, subject, data, jetstream.WithMsgID(SignalID(s)))
		if err == nil {
			return nil
		}
		if attempt == signalAttempts || ctx.Err() != nil {
			return fmt.Errorf("publish signal %s revision %d: %w", subject, s.Revision, err)
		}
		if serr := Sleep(ctx, wait); serr != nil {
			return fmt.Errorf("publish signal %s revision %d: %w", subject, s.Revision, errors.Join(err, serr))
		}
		wait *= 2
	}
}

// Backlog returns how many signals follow sequence after, and when the first of them was stored
// (zero when none does or it is no longer kept): how far a reader at after is behind.
func (p *Signals) Backlog(ctx context.Context, after uint64) (count uint64, oldest time.Time, err error) {
	info, err := p.stream.Info(ctx)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stream %s: %w", SignalStreamName, err)
	}
	last := info.State.LastSeq
	if after >= last {
		return 0, time.Time{}, nil
	}
	from := max(after+1, info.State.FirstSeq)
	m, err := p.stream.GetMsg(ctx, from)
	if err == nil {
		oldest = m.Time
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, time.Time{}, fmt.Errorf("signal %d: %w", from, err)
	}
	return last - after, oldest, nil
}
