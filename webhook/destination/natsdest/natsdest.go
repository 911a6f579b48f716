// Package natsdest publishes change events to subjects of another NATS, or to a JetStream stream
// there: a destination's Sink (see package destination). The messages go on
// "<subject_prefix>.<slug>", in the binary content mode of the CloudEvents NATS binding (the
// attributes as "ce-" headers, the body the data) or the structured one.
//
// Its publisher is a small one of its own behind watermill's message.Publisher interface rather
// than watermill-nats: that adapter is built on nats.go's older JetStream API and owns subjects
// and marshalling in ways the binding does not want, while this one needs a connection of its
// own, a flush or a stream's acknowledgement per publication, and the event id as JetStream's
// message id, so that a stream drops an event published again after a failure.
//
// It imports the standard library, nats.go, nkeys, nats.go's jwt, watermill and
// webhook/destination.
package natsdest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/opencarte/publisher/webhook/destination"
)

// publishTimeout bounds one publication: the server's acknowledgements of every event, or the
// flush that proves it has them.
const publishTimeout = 30 * time.Second

// maxPending bounds the JetStream publications awaiting their acknowledgement: a page larger
// than this waits for the first ones before sending more.
const maxPending = 1024

// Check refuses, naming the field, a registration that Open would refuse before connecting:
// credentials that are not a .creds file's content or a user's nkey seed.
func Check(spec destination.Spec, sec destination.Secrets) error {
	_, err := options(spec, sec)
	return err
}

// Open connects to the destination's NATS with its credentials; it returns when ctx ends, with
// ctx's error. The connection reconnects by itself, forever, a second apart: a Publish while the
// server is away fails at once, saying so, and a later one succeeds once the server is back, so
// the Sink may be kept after a failed Publish (or closed and opened again).
func Open(ctx context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	opts, err := options(spec, sec)
	if err != nil {
		return nil, err
	}
	nc, err := connect(ctx, spec.URL, opts)
	if err != nil {
		return nil, err
	}
	p := &publisher{nc: nc}
	if spec.JetStream {
		p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending),
			jetstream.WithPublishAsyncTimeout(publishTimeout))
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("nats %s: %w", spec.URL, err)
		}
	}
	return &sink{p: p, prefix: spec.SubjectPrefix, structured: spec.ContentMode == destination.ModeStructured}, nil
}

// connect opens the connection, or gives up when ctx ends: a connection made after that is
// closed at once.
func connect(ctx context.Context, url string, opts []nats.Option) (*nats.Conn, error) {
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(url, opts...)
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("nats %s: %w", url, r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("nats %s: %w", url, ctx.Err())
	}
}

// options are the connection's: its name, its reconnections, its credentials and TLS. While it
// reconnects, publications fail at once instead of waiting in a buffer: the runner publishes
// them again.
func options(spec destination.Spec, sec destination.Secrets) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("publisher destination " + spec.SubjectPrefix), nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second), nats.ReconnectBufSize(-1),
		nats.Timeout(10 * time.Second), nats.RetryOnFailedConnect(false),
	}
	switch {
	case spec.User != "":
		opts = append(opts, nats.UserInfo(spec.User, sec.Password))
	case sec.Token != "":
		opts = append(opts, nats.Token(sec.Token))
	case sec.Creds != "":
		opt, err := credsOption(sec.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	case sec.NKeySeed != "":
		kp, err := nkeys.FromSeed([]byte(sec.NKeySeed))
		if err != nil {
			return nil, &destination.FieldError{Field: "nkey_seed", Reason: "not an nkey seed"}
		}
		pub, err := kp.PublicKey()
		if err != nil || !nkeys.IsValidPublicUserKey(pub) {
			return nil, &destination.FieldError{Field: "nkey_seed", Reason: "not a user's seed"}
		}
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	if spec.TLS != nil {
		cfg, err := spec.TLS.ClientConfig(sec.TLSKey)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}

// credsOption authenticates with the user JWT and the seed of a .creds file's content, read in
// memory: no file holds them.
func credsOption(creds string) (nats.Option, error) {
	userJWT, err := jwt.ParseDecoratedJWT([]byte(creds))
	if err != nil {
		return nil, &destination.FieldError{Field: "creds", Reason: "not the content of a .creds file"}
	}
	if _, err := jwt.DecodeUserClaims(userJWT); err != nil {
		return nil, &destination.FieldError{Field: "creds", Reason: "no user JWT in the .creds file"}
	}
	kp, err := jwt.ParseDecoratedNKey([]byte(creds))
	if err != nil {
		return nil, &destination.FieldError{Field: "creds", Reason: "no seed in the .creds file"}
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, &destination.FieldError{Field: "creds", Reason: "no seed in the .creds file"}
	}
	return nats.UserJWTAndSeed(userJWT, string(seed)), nil
}

// sink turns events into the binding's messages and publishes them, one subject per slug.
type sink struct {
	p          *publisher
	prefix     string
	structured bool
}

func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	// A connection that is reconnecting would refuse the messages one by one: say at once that
	// the server is away, and why when the client knows.
	if s.p.nc.Status() != nats.CONNECTED {
		return s.failed(s.p.nc.LastError())
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for _, e := range evs {
		if err := s.p.Publish(s.prefix+"."+e.Subject, s.message(ctx, e)); err != nil {
			s.p.discard()
			return s.failed(err)
		}
	}
	if err := s.p.flush(ctx); err != nil {
		return s.failed(err)
	}
	return nil
}

// failed returns err, saying first that the connection is not connected when it is not: the
// client's own words for a server gone away vary with the moment it learns it.
func (s *sink) failed(err error) error {
	st := s.p.nc.Status()
	switch {
	case st == nats.CONNECTED:
		return err
	case err == nil:
		return fmt.Errorf("nats: not connected (%s)", st)
	default:
		return fmt.Errorf("nats: not connected (%s): %w", st, err)
	}
}

// message is the event in the binding's content mode, its id the message's uuid.
func (s *sink) message(ctx context.Context, e destination.Event) *message.Message {
	msg := message.NewMessage(e.ID, nil)
	msg.SetContext(ctx)
	if s.structured {
		msg.Payload = e.StructuredJSON()
		msg.Metadata.Set("content-type", destination.StructuredContentType)
		return msg
	}
	msg.Payload = e.DataJSON()
	for _, a := range e.Attributes() {
		msg.Metadata.Set("ce-"+a.Name, headerValue(a.Value))
	}
	return msg
}

// headerValue is an attribute's value as the NATS binding writes it in a header: space, '"', '%'
// and every byte outside printable ASCII percent-encoded (upper-case hexadecimal), so that a
// source URL with any of them stays one header value. Slugs, ids, times and types have none.
func headerValue(v string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(v); i++ {
		if escaped(v[i]) {
			n++
		}
	}
	if n == 0 {
		return v
	}
	b := make([]byte, 0, len(v)+2*n)
	for i := 0; i < len(v); i++ {
		if c := v[i]; escaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func escaped(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }

func (s *sink) Close() error { return s.p.Close() }

// publisher publishes watermill messages on NATS subjects: their metadata as headers, their
// uuid as JetStream's message id. It is asynchronous, as watermill allows: Publish sends, and
// flush waits until the server has every message sent before it (each acknowledged by its
// stream, or, without JetStream, a flush answered), so that a page of events costs one round
// trip. It is safe for concurrent use.
type publisher struct {
	nc *nats.Conn
	js jetstream.JetStream // nil: core NATS

	mu      sync.Mutex
	pending []jetstream.PubAckFuture
}

var _ message.Publisher = (*publisher)(nil)

// Publish sends the messages on the subject topic. In JetStream, once maxPending messages await
// their acknowledgement, it waits for them (within the message's context) before sending more.
func (p *publisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		nm := &nats.Msg{Subject: topic, Data: m.Payload, Header: nats.Header{}}
		for k, v := range m.Metadata {
			nm.Header.Set(k, v)
		}
		if p.js == nil {
			if err := p.nc.PublishMsg(nm); err != nil {
				return fmt.Errorf("nats: publish on %s: %w", topic, err)
			}
			continue
		}
		if err := p.publishAsync(m.Context(), nm, m.UUID); err != nil {
			return err
		}
	}
	return nil
}

func (p *publisher) publishAsync(ctx context.Context, nm *nats.Msg, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) >= maxPending {
		if err := p.awaitLocked(ctx); err != nil {
			return err
		}
	}
	f, err := p.js.PublishMsgAsync(nm, jetstream.WithMsgID(id))
	if err != nil {
		return fmt.Errorf("nats: publish on %s: %w", nm.Subject, err)
	}
	p.pending = append(p.pending, f)
	return nil
}

// flush returns once the server has every message sent, or when ctx ends.
func (p *publisher) flush(ctx context.Context) error {
	if p.js == nil {
		if err := p.nc.FlushWithContext(ctx); err != nil {
			return fmt.Errorf("nats: flush: %w", err)
		}
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.awaitLocked(ctx)
}

// awaitLocked waits for the acknowledgements of the messages sent, and forgets them.
func (p *publisher) awaitLocked(ctx context.Context) error {
	defer func() { p.pending = p.pending[:0] }()
	for _, f := range p.pending {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
				return fmt.Errorf("nats: no stream holds %s: %w", f.Msg().Subject, err)
			}
			return fmt.Errorf("nats: %s not stored: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return fmt.Errorf("nats: waiting for the stream's acknowledgements: %w", ctx.Err())
		}
	}
	return nil
}

// discard forgets the messages awaiting their acknowledgement, after a failure: they are
// published again.
func (p *publisher) discard() {
	p.mu.Lock()
	p.pending = p.pending[:0]
	p.mu.Unlock()
}

// Close closes the connection, sending what its buffer holds.
func (p *publisher) Close() error {
	p.nc.Close()
	return nil
}
