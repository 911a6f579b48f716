package kafka

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/IBM/sarama"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/opencarte/publisher/webhook/destination"
)

// publisher is a watermill message.Publisher on Sarama's synchronous producer that sends the
// messages of one Publish as one batch and returns once every one is acknowledged.
type publisher struct {
	client    sarama.Client
	producer  sarama.SyncProducer
	marshaler wkafka.Marshaler
	// mu is held for reading while a batch is sent, for writing by Close: Sarama's producer must
	// not be closed while a batch is given to it.
	mu     sync.RWMutex
	closed bool
}

var _ message.Publisher = (*publisher)(nil)

// newPublisher connects to the brokers and looks the topic up.
func newPublisher(brokers []string, topic string, cfg *sarama.Config) (*publisher, error) {
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka %v: %w", brokers, err)
	}
	if _, err := client.Partitions(topic); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("kafka %v: topic %s: %w", brokers, topic, err)
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("kafka %v: %w", brokers, err)
	}
	return &publisher{client: client, producer: producer, marshaler: marshaler{}}, nil
}

// Publish sends msgs to topic as one batch: Sarama's producer groups them by partition, keeping
// their order within each.
func (p *publisher) Publish(topic string, msgs ...*message.Message) error {
	pms := make([]*sarama.ProducerMessage, len(msgs))
	for i, msg := range msgs {
		pm, err := p.marshaler.Marshal(topic, msg)
		if err != nil {
			return fmt.Errorf("kafka %s: message %s: %w", topic, msg.UUID, err)
		}
		pms[i] = pm
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errClosed
	}
	err := p.producer.SendMessages(pms)
	var perrs sarama.ProducerErrors
	if errors.As(err, &perrs) && len(perrs) > 0 {
		return fmt.Errorf("kafka %s: %d of %d events not acknowledged: %w", topic, len(perrs), len(msgs), perrs[0].Err)
	}
	if err != nil {
		return fmt.Errorf("kafka %s: %w", topic, err)
	}
	return nil
}

// Close waits for the batch being sent, then closes the producer and its connections.
func (p *publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return errors.Join(p.producer.Close(), p.client.Close())
}

// keyMetadata is the metadata holding the message key; every other one is a header.
const keyMetadata = "_key"

// eventMessage is e as a watermill message laid out as the CloudEvents Kafka binding says: the
// slug as the key; in the binary mode the attributes as "ce_" headers, datacontenttype as
// "content-type", the data as the payload; in the structured mode "content-type" and the whole
// event as the payload.
func eventMessage(e destination.Event, structured bool) *message.Message {
	msg := message.NewMessage(e.ID, nil)
	msg.Metadata.Set(keyMetadata, e.Subject)
	if structured {
		msg.Metadata.Set("content-type", destination.StructuredContentType)
		msg.Payload = e.StructuredJSON()
		return msg
	}
	for _, a := range e.Attributes() {
		if a.Name == "datacontenttype" {
			msg.Metadata.Set("content-type", a.Value)
		} else {
			msg.Metadata.Set("ce_"+a.Name, a.Value)
		}
	}
	msg.Payload = e.DataJSON()
	return msg
}

// marshaler is watermill-kafka's Marshaler of the messages eventMessage lays out: the key, then
// the headers in the order of their names.
type marshaler struct{}

func (marshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	key := msg.Metadata.Get(keyMetadata)
	if key == "" {
		return nil, errors.New("no key")
	}
	pm := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.ByteEncoder(msg.Payload)}
	names := make([]string, 0, len(msg.Metadata))
	for name := range msg.Metadata {
		if name != keyMetadata {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	pm.Headers = make([]sarama.RecordHeader, len(names))
	for i, name := range names {
		pm.Headers[i] = sarama.RecordHeader{Key: []byte(name), Value: []byte(msg.Metadata[name])}
	}
	return pm, nil
}
