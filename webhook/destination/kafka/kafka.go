// Package kafka publishes change events to a Kafka topic: a destination's Sink (see package
// destination), on watermill-kafka's publisher (Sarama's synchronous producer) with a marshaler
// of its own for the CloudEvents Kafka binding. The message key is the establishment's slug, so
// that one establishment's events stay in order in one partition; in the binary content mode
// the attributes are "ce_" headers and datacontenttype the "content-type" header, the value the
// data; in the structured mode the value is the whole event.
//
// It imports the standard library, watermill, watermill-kafka, Sarama and webhook/destination.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/opencarte/publisher/webhook/destination"
)

// Open connects a producer to the destination's brokers. Sarama reconnects by itself: a Publish
// while the brokers are down fails once its retries are spent, and a later one succeeds when they
// are back.
func Open(_ context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	cfg, err := saramaConfig(spec, sec)
	if err != nil {
		return nil, err
	}
	pub, err := wkafka.NewPublisher(wkafka.PublisherConfig{
		Brokers: spec.Brokers, Marshaler: marshaler{structured: spec.ContentMode == destination.ModeStructured},
		OverwriteSaramaConfig: cfg,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("kafka %v: %w", spec.Brokers, errors.Unwrap(err))
	}
	return &sink{pub: pub, topic: spec.Topic}, nil
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
	return cfg, nil
}

// sink publishes a page of events to the topic: watermill's Publish sends them one after
// another, each acknowledged before the next.
type sink struct {
	pub   *wkafka.Publisher
	topic string
}

func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	msgs := make([]*message.Message, len(evs))
	for i, e := range evs {
		msgs[i] = eventMessage(ctx, e)
	}
	done := make(chan error, 1)
	go func() { done <- s.pub.Publish(s.topic, msgs...) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kafka: %w", ctx.Err()) // the producer's own timeouts end the send
	}
}

func (s *sink) Close() error { return s.pub.Close() }

// eventMessage is e as a watermill message: its id, its slug as the partition key, its attributes
// and data, for the marshaler to lay out.
func eventMessage(ctx context.Context, e destination.Event) *message.Message {
	msg := message.NewMessage(e.ID, nil)
	msg.SetContext(ctx)
	msg.Metadata.Set(keyMetadata, e.Subject)
	for _, a := range e.Attributes() {
		msg.Metadata.Set(a.Name, a.Value)
	}
	msg.Metadata.Set(structuredMetadata, string(e.StructuredJSON()))
	msg.Payload = e.DataJSON()
	return msg
}

// Metadata the marshaler reads and does not send as such.
const (
	keyMetadata        = "_key"
	structuredMetadata = "_structured"
)

// marshaler lays out an event as the CloudEvents Kafka binding says.
type marshaler struct{ structured bool }

func (m marshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	pm := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(msg.Metadata.Get(keyMetadata))}
	if m.structured {
		pm.Value = sarama.ByteEncoder(msg.Metadata.Get(structuredMetadata))
		pm.Headers = []sarama.RecordHeader{{Key: []byte("content-type"), Value: []byte(destination.StructuredContentType)}}
		return pm, nil
	}
	pm.Value = sarama.ByteEncoder(msg.Payload)
	for _, name := range attributeOrder {
		v := msg.Metadata.Get(name)
		key := "ce_" + name
		if name == "datacontenttype" {
			key = "content-type"
		}
		pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(key), Value: []byte(v)})
	}
	return pm, nil
}

// attributeOrder is the order of the headers: the attributes' own.
var attributeOrder = func() []string {
	var names []string
	for _, a := range (destination.Event{}).Attributes() {
		names = append(names, a.Name)
	}
	return names
}()
