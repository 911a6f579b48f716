// Package brokertest runs real brokers for the tests of the destinations and for the scale
// benchmark: Kafka in process (franz-go's kfake, which speaks the Kafka protocol), and, under the
// build tag brokers, private instances of Debian's RabbitMQ and PostgreSQL. Each can be stopped
// and started again with its data, so that a test can take its broker down.
package brokertest
