// Package amqp publishes change events to an exchange of an AMQP 0-9-1 broker (RabbitMQ): a
// destination's Sink (see package destination). The exchange is declared durable, of the
// registration's type; each event goes with the registration's routing key, "{establishment}"
// replaced by the slug, as a persistent message whose message_id is the event's id and whose
// timestamp is its time. In the binary content mode of the CloudEvents AMQP binding the
// attributes are "cloudEvents_" headers and datacontenttype the content_type property, the body
// the data; in the structured mode the body is the whole event, content_type
// "application/cloudevents+json".
//
// A publication returns once RabbitMQ confirmed every message (publisher confirms). Messages are
// mandatory: one that no queue takes comes back, and that is an error, like a negative
// confirmation, so that the caller publishes the page again rather than losing it. A broker that
// drops unroutable messages on purpose says so with an alternate exchange.
//
// Its publisher is a small one of its own behind watermill's message.Publisher, with a marshaler
// that implements watermill-amqp's Marshaler (so that a watermill-amqp subscriber can read the
// events with it), rather than watermill-amqp's publisher: that one waits for each message's
// confirmation before sending the next, never sees a returned message (it registers no return
// listener, and RabbitMQ confirms a returned message), takes the routing key per topic rather
// than per message, does not stop waiting when a context ends, and reconnects in a goroutine
// that replaces the connection its Publish reads without a lock.
//
// It imports the standard library, watermill, watermill-amqp, amqp091-go and
// webhook/destination.
package amqp
