package amqp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/opencarte/publisher/webhook/destination"
)

// HeaderPrefix is the CloudEvents AMQP binding's prefix of the attributes' headers.
const HeaderPrefix = "cloudEvents_"

// Metadata the marshaler and the publisher read and do not send as headers: names starting with
// "_", which no CloudEvents attribute has.
const (
	routingKeyMetadata = "_routing_key"
	structuredMetadata = "_structured"
)

// eventMessage is e as a watermill message: its id, its attributes and data, its structured form
// and its routing key, for the marshaler and the publisher to lay out.
func eventMessage(ctx context.Context, e destination.Event, routingKey string) *message.Message {
	msg := message.NewMessage(e.ID, e.DataJSON())
	msg.SetContext(ctx)
	for _, a := range e.Attributes() {
		msg.Metadata.Set(a.Name, a.Value)
	}
	msg.Metadata.Set(structuredMetadata, string(e.StructuredJSON()))
	msg.Metadata.Set(routingKeyMetadata, routingKey)
	return msg
}

// Marshaler lays out an event's message as the CloudEvents AMQP binding says, in the binary
// content mode or, when Structured, in the structured one. It is a watermill-amqp Marshaler: its
// Unmarshal reads the events back, the attributes in the message's metadata.
type Marshaler struct{ Structured bool }

var _ wamqp.Marshaler = Marshaler{}

// Marshal returns the persistent message of an event's watermill message.
func (m Marshaler) Marshal(msg *message.Message) (amqp.Publishing, error) {
	p := amqp.Publishing{DeliveryMode: amqp.Persistent, MessageId: msg.UUID}
	if t, err := time.Parse(time.RFC3339Nano, msg.Metadata.Get("time")); err == nil {
		p.Timestamp = t
	}
	if m.Structured {
		p.ContentType = destination.StructuredContentType
		p.Body = []byte(msg.Metadata.Get(structuredMetadata))
		return p, nil
	}
	p.ContentType = msg.Metadata.Get("datacontenttype")
	p.Headers = amqp.Table{}
	for name, v := range msg.Metadata {
		if name != "datacontenttype" && !strings.HasPrefix(name, "_") {
			p.Headers[HeaderPrefix+name] = v
		}
	}
	p.Body = msg.Payload
	return p, nil
}

// Unmarshal returns the watermill message of an event read from a queue: its id, its attributes
// as metadata (datacontenttype from the content_type property) and its data as payload.
func (m Marshaler) Unmarshal(d amqp.Delivery) (*message.Message, error) {
	if d.ContentType == destination.StructuredContentType {
		return unmarshalStructured(d.Body)
	}
	msg := message.NewMessage(d.MessageId, d.Body)
	for key, v := range d.Headers {
		name, ok := strings.CutPrefix(key, HeaderPrefix)
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("header %s: %T, want a string", key, v)
		}
		msg.Metadata.Set(name, s)
	}
	msg.Metadata.Set("datacontenttype", d.ContentType)
	if id := msg.Metadata.Get("id"); id != "" {
		msg.UUID = id
	}
	return msg, nil
}

// unmarshalStructured reads an event in the JSON event format.
func unmarshalStructured(body []byte) (*message.Message, error) {
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("structured event: %w", err)
	}
	msg := message.NewMessage("", []byte(ev["data"]))
	for name, raw := range ev {
		var s string
		if name == "data" || json.Unmarshal(raw, &s) != nil {
			continue
		}
		msg.Metadata.Set(name, s)
	}
	msg.UUID = msg.Metadata.Get("id")
	if msg.UUID == "" {
		return nil, errors.New("structured event: no id")
	}
	return msg, nil
}
