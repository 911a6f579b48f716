// Package destination publishes the change entries of the changes feed (events.Change) to the
// platforms' own brokers, as CloudEvents 1.0: Kafka, AMQP 0-9-1 (RabbitMQ), NATS and
// PostgreSQL, each through a Sink that a subpackage opens with watermill's publisher for that
// broker.
package destination
