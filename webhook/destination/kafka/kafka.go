package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/opencarte/publisher/webhook/destination"
)

// Open checks the destination's registration, connects to its brokers and looks its topic up
// (a broker that creates topics on demand creates it). Sarama reconnects by itself: a Publish
// while the brokers are down fails once its retries are spent, and a later one on the same Sink
// succeeds when they are back. No error names a credential.
func Open(ctx context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	if spec.Type != destination.TypeKafka {
		return nil, &destination.FieldError{Field: "type", Reason: fmt.Sprintf("%q is not %q", spec.Type, destination.TypeKafka)}
	}
	if err := spec.Validate(sec); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	cfg, err := saramaConfig(spec, sec)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	pub, err := connect(ctx, spec.Brokers, spec.Topic, cfg)
	if err != nil {
		return nil, err
	}
	return &sink{
		pub: pub, topic: spec.Topic, structured: spec.ContentMode == destination.ModeStructured,
		turn: make(chan struct{}, 1),
	}, nil
}

// connect returns a publisher on the brokers once it knows the topic's partitions, or an error
// when ctx ends first.
func connect(ctx context.Context, brokers []string, topic string, cfg *sarama.Config) (*publisher, error) {
	type result struct {
		pub *publisher
		err error
	}
	done := make(chan result, 1)
	go func() {
		pub, err := newPublisher(brokers, topic, cfg)
		done <- result{pub, err}
	}()
	select {
	case r := <-done:
		return r.pub, r.err
	case <-ctx.Done():
		go func() { // the connection ends within its own timeouts
			if r := <-done; r.pub != nil {
				_ = r.pub.Close()
			}
		}()
		return nil, fmt.Errorf("kafka %v: %w", brokers, context.Cause(ctx))
	}
}

// saramaConfig is the producer's: every in-sync replica acknowledges, one request in flight per
// broker so that a retry cannot reorder, bounded retries and timeouts; SASL and TLS as given.
func saramaConfig(spec destination.Spec, sec destination.Secrets) (*sarama.Config, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "publisher-destination"
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 3
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Net.MaxOpenRequests = 1
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 15 * time.Second
	cfg.Net.WriteTimeout = 15 * time.Second
	cfg.Metadata.Retry.Max = 2
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	if spec.SASL != nil {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.User, cfg.Net.SASL.Password = spec.SASL.Username, sec.Password
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(spec.SASL.Mechanism)
		switch spec.SASL.Mechanism {
		case sarama.SASLTypeSCRAMSHA256:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = scramSHA256
		case sarama.SASLTypeSCRAMSHA512:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = scramSHA512
		}
	}
	if spec.TLS != nil {
		t, err := spec.TLS.ClientConfig(sec.TLSKey)
		if err != nil {
			return nil, err
		}
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, t
	}
	return cfg, cfg.Validate()
}

// sink publishes pages of events to the topic, one page at a time: a page whose Publish returned
// when its context ended is still being sent, and the next page waits for it, so that pages never
// interleave.
type sink struct {
	pub        *publisher
	topic      string
	structured bool
	turn       chan struct{} // holds a token while a page is being sent
}

// Publish sends the events as one batch and returns once the brokers acknowledged every one, or
// the first error, or when ctx ends (the events sent may then still arrive: the caller publishes
// them again, at least once).
func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kafka %s: %w", s.topic, context.Cause(ctx))
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("kafka %s: the previous page is still being sent: %w", s.topic, context.Cause(ctx))
	}
	msgs := make([]*message.Message, len(evs))
	for i, e := range evs {
		msgs[i] = eventMessage(e, s.structured)
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-s.turn }()
		done <- s.pub.Publish(s.topic, msgs...)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kafka %s: %d events sent, not all acknowledged: %w", s.topic, len(evs), context.Cause(ctx))
	}
}

// Close waits for the page being sent, if any (within the producer's timeouts), then closes the
// connections.
func (s *sink) Close() error { return s.pub.Close() }

var errClosed = errors.New("kafka: the publisher is closed")
