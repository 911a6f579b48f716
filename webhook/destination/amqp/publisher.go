package amqp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Bounds of a connection and a publication.
const (
	dialTimeout      = 10 * time.Second
	handshakeTimeout = 10 * time.Second // TLS and AMQP's own
	closeTimeout     = 2 * time.Second
	heartbeat        = 10 * time.Second
	// batchSize bounds the messages awaiting their confirmations, and so the returned messages
	// the broker can send before they are read.
	batchSize = 256
)

// connectionName is how the broker's management lists the connection.
const connectionName = "publisher destination"

// publisher publishes watermill messages to an exchange (the topic of message.Publisher), each
// with the routing key in its metadata, mandatory and confirmed. The messages of a publication
// go on one channel, so they reach the exchange in order. It connects when it has no connection,
// and drops its connection after any failure, so that the next publication connects again.
type publisher struct {
	url       string // holds the credentials: never in an error
	target    string // "amqp host:port/vhost", how errors name the broker
	tls       *tls.Config
	kind      string
	secrets   []string
	marshaler Marshaler

	mu       sync.Mutex
	conn     *amqp.Connection
	netConn  net.Conn
	ch       *amqp.Channel
	returns  chan amqp.Return
	closes   chan *amqp.Error
	declared string // the exchange declared on ch
	closed   bool
}

var _ message.Publisher = (*publisher)(nil)

// Publish returns once the broker confirmed every message, or fails; it stops waiting when the
// first message's context ends.
func (p *publisher) Publish(exchange string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ctx := msgs[0].Context()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New(p.target + ": the publisher is closed")
	}
	if err := p.connect(ctx, exchange); err != nil {
		return err
	}
	// A broker that stops reading (a resource alarm) would hold a write: the end of ctx closes
	// the socket.
	nc := p.netConn
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	for len(msgs) > 0 {
		n := min(len(msgs), batchSize)
		if err := p.publishBatch(ctx, exchange, msgs[:n]); err != nil {
			stop()
			p.drop()
			return err
		}
		msgs = msgs[n:]
	}
	if !stop() {
		p.drop() // the socket is closed: connect again next time
	}
	return nil
}

// publishBatch sends the messages, then waits for their confirmations; a message the exchange
// routed to no queue comes back before its confirmation.
func (p *publisher) publishBatch(ctx context.Context, exchange string, msgs []*message.Message) error {
	confirms := make([]*amqp.DeferredConfirmation, len(msgs))
	for i, msg := range msgs {
		pub, err := p.marshaler.Marshal(msg)
		if err != nil {
			return p.errorf("%s: message %s: %w", p.target, msg.UUID, err)
		}
		key := msg.Metadata.Get(routingKeyMetadata)
		if confirms[i], err = p.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, pub); err != nil {
			return p.failed(ctx, "publish to exchange "+exchange, err)
		}
	}
	for i, c := range confirms {
		acked, err := c.WaitContext(ctx)
		if err != nil {
			return p.failed(ctx, "await the confirmations", err)
		}
		if !acked {
			if reason := p.closeReason(); reason != nil {
				return p.failed(ctx, "await the confirmations", reason)
			}
			return p.errorf("%s: exchange %s refused message %s (a negative confirmation: a queue full or failing)", p.target, exchange, msgs[i].UUID)
		}
	}
	select {
	case r, ok := <-p.returns:
		if ok {
			return p.errorf("%s: exchange %s routed message %s (routing key %q) to no queue (%d %s): bind a queue to it, or give it an alternate exchange",
				p.target, exchange, r.MessageId, r.RoutingKey, r.ReplyCode, r.ReplyText)
		}
		return p.failed(ctx, "await the confirmations", p.closeReason())
	default:
		return nil
	}
}

// connect opens a connection and a channel in confirm mode, and declares the exchange, unless
// they are open already.
func (p *publisher) connect(ctx context.Context, exchange string) error {
	if p.ch != nil && !p.ch.IsClosed() && !p.conn.IsClosed() && p.declared == exchange {
		return nil
	}
	p.drop()
	var nc net.Conn
	stop := func() bool { return true }
	cfg := amqp.Config{Heartbeat: heartbeat, Properties: amqp.NewConnectionProperties(),
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			_ = c.SetDeadline(time.Now().Add(handshakeTimeout)) // cleared once AMQP is open
			nc, stop = c, context.AfterFunc(ctx, func() { c.Close() })
			return c, nil
		}}
	cfg.Properties.SetClientConnectionName(connectionName)
	if p.tls != nil {
		cfg.TLSClientConfig = p.tls.Clone()
	}
	conn, err := amqp.DialConfig(p.url, cfg)
	stop()
	if err != nil {
		return p.failed(ctx, "connect", err)
	}
	p.conn, p.netConn = conn, nc
	if err := p.open(exchange); err != nil {
		p.drop()
		return p.failed(ctx, "open a channel", err)
	}
	return nil
}

// open opens the channel of the connection and declares the exchange, durable.
func (p *publisher) open(exchange string) error {
	ch, err := p.conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("confirm mode: %w", err)
	}
	if err := ch.ExchangeDeclare(exchange, p.kind, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s (%s, durable): %w", exchange, p.kind, err)
	}
	p.ch, p.declared = ch, exchange
	p.returns = ch.NotifyReturn(make(chan amqp.Return, batchSize))
	p.closes = ch.NotifyClose(make(chan *amqp.Error, 1))
	return nil
}

// closeReason returns why the broker closed the channel or the connection, if it said.
func (p *publisher) closeReason() error {
	select {
	case e, ok := <-p.closes:
		if ok && e != nil {
			return e
		}
	default:
	}
	if p.conn != nil && p.conn.IsClosed() {
		return errors.New("the connection closed")
	}
	return nil
}

// failed is the error of a step that failed with err: the context's end when it ended, the
// broker named without credentials.
func (p *publisher) failed(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		err = errors.New("the connection closed")
	}
	return p.errorf("%s: %s: %w", p.target, step, err)
}

// errorf formats an error, and replaces any credential it shows.
func (p *publisher) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	msg := err.Error()
	for _, s := range p.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	if msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// drop closes the connection, if any.
func (p *publisher) drop() {
	if p.conn != nil {
		_ = p.conn.CloseDeadline(time.Now().Add(closeTimeout))
	}
	p.conn, p.netConn, p.ch, p.returns, p.closes, p.declared = nil, nil, nil, nil, nil, ""
}

// Close closes the connection; a later Publish fails.
func (p *publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.drop()
	return nil
}
