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

// Open connects to the destination's NATS with its credentials. The connection reconnects by
// itself: a Publish while the server is down fails once its timeout passes, and a later one
// succeeds when the server is back.
func Open(ctx context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	opts, err := options(spec, sec)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(spec.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", spec.URL, err)
	}
	p := &Publisher{nc: nc, jetStream: spec.JetStream}
	if spec.JetStream {
		if p.js, err = jetstream.New(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("nats %s: %w", spec.URL, err)
		}
	}
	return &sink{p: p, prefix: spec.SubjectPrefix, structured: spec.ContentMode == destination.ModeStructured}, nil
}

// options are the connection's: its name, its reconnections, its credentials and TLS.
func options(spec destination.Spec, sec destination.Secrets) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("publisher destination"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.Timeout(10 * time.Second), nats.RetryOnFailedConnect(false),
	}
	switch {
	case spec.User != "":
		opts = append(opts, nats.UserInfo(spec.User, sec.Password))
	case sec.Token != "":
		opts = append(opts, nats.Token(sec.Token))
	case sec.Creds != "":
		userJWT, err := jwt.ParseDecoratedJWT([]byte(sec.Creds))
		if err != nil {
			return nil, errors.New("creds: not the content of a .creds file")
		}
		kp, err := jwt.ParseDecoratedNKey([]byte(sec.Creds))
		if err != nil {
			return nil, errors.New("creds: no seed in the .creds file")
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, errors.New("creds: no seed in the .creds file")
		}
		opts = append(opts, nats.UserJWTAndSeed(userJWT, string(seed)))
	case sec.NKeySeed != "":
		kp, err := nkeys.FromSeed([]byte(sec.NKeySeed))
		if err != nil {
			return nil, errors.New("nkey_seed: not an nkey seed")
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, errors.New("nkey_seed: not a user's seed")
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

// sink turns events into the binding's messages and publishes them, one subject per slug.
type sink struct {
	p          *Publisher
	prefix     string
	structured bool
}

func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	// A connection that is reconnecting would hold the messages until the timeout: say at once
	// that the server is away, and try again later.
	if st := s.p.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("nats: not connected (%s)", st)
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for _, e := range evs {
		msg := message.NewMessage(e.ID, nil)
		msg.SetContext(ctx)
		if s.structured {
			msg.Payload = e.StructuredJSON()
			msg.Metadata.Set("content-type", destination.StructuredContentType)
		} else {
			msg.Payload = e.DataJSON()
			for _, a := range e.Attributes() {
				msg.Metadata.Set("ce-"+a.Name, a.Value)
			}
		}
		if err := s.p.Publish(s.prefix+"."+e.Subject, msg); err != nil {
			return err
		}
	}
	return s.p.settle(ctx)
}

func (s *sink) Close() error { return s.p.Close() }

// Publisher publishes watermill messages on NATS subjects: their metadata as headers, their
// uuid as JetStream's message id. Publish sends; the acknowledgements, or a flush, are awaited
// by settle, so that a page of events costs one round trip.
type Publisher struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	jetStream bool
	pending   []jetstream.PubAckFuture
}

var _ message.Publisher = (*Publisher)(nil)

// Publish sends the messages on the subject topic.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		nm := &nats.Msg{Subject: topic, Data: m.Payload, Header: nats.Header{}}
		for k, v := range m.Metadata {
			nm.Header.Set(k, v)
		}
		if !p.jetStream {
			if err := p.nc.PublishMsg(nm); err != nil {
				return fmt.Errorf("nats: publish on %s: %w", topic, err)
			}
			continue
		}
		f, err := p.js.PublishMsgAsync(nm, jetstream.WithMsgID(m.UUID))
		if err != nil {
			return fmt.Errorf("nats: publish on %s: %w", topic, err)
		}
		p.pending = append(p.pending, f)
	}
	return nil
}

// settle returns once the server has every message sent: each acknowledged by its stream, or,
// without JetStream, a flush answered.
func (p *Publisher) settle(ctx context.Context) error {
	defer func() { p.pending = p.pending[:0] }()
	if !p.jetStream {
		if err := p.nc.FlushWithContext(ctx); err != nil {
			return fmt.Errorf("nats: flush: %w", err)
		}
		return nil
	}
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

// Close closes the connection.
func (p *Publisher) Close() error {
	p.nc.Close()
	return nil
}
