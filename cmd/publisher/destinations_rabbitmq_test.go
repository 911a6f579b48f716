//go:build brokers

package main

import (
	"encoding/json"
	"testing"

	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// An AMQP destination on a private RabbitMQ from Debian's package, read from durable queues bound
// to its exchange with amqp091-go: the end-to-end checks of testDestinationsThroughServe.
func TestRabbitMQDestinationThroughServe(t *testing.T) {
	const password = "rabbit-secret-pw"
	r := brokertest.StartRabbitMQ(t, brokertest.RabbitMQOptions{User: "menus", Password: password})
	consumers := map[string]*brokertest.Consumer{}
	for _, name := range []string{"all", "only"} {
		c, err := brokertest.Consume(r.URL(), "menus-"+name, "topic", "menus-"+name, "establishment.#")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		consumers[name] = c
	}
	testDestinationsThroughServe(t, brokerUnderTest{
		fields: func(name string) map[string]any {
			return map[string]any{"type": "amqp", "url": r.URL(), "exchange": "menus-" + name}
		},
		secret: password,
		received: func(t *testing.T, name string) []brokerEvent {
			var out []brokerEvent
			for _, m := range consumers[name].Messages() {
				header := func(attr string) string { s, _ := m.Headers["cloudEvents_"+attr].(string); return s }
				e := brokerEvent{
					ID: header("id"), Source: header("source"), Type: header("type"),
					Subject: header("subject"), SpecVersion: header("specversion"), Time: header("time"),
				}
				if err := json.Unmarshal(m.Body, &e.Data); err != nil {
					t.Fatalf("message %s of %s: %v", m.MessageId, name, err)
				}
				if m.RoutingKey != "establishment."+e.Subject || m.ContentType != "application/json" || m.MessageId != e.ID {
					t.Errorf("message of %s: routing key %q, content type %q, message id %q", e.Subject, m.RoutingKey, m.ContentType, m.MessageId)
				}
				out = append(out, e)
			}
			return out
		},
		stop: func(*testing.T) { r.Stop() },
		start: func(t *testing.T) {
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
		},
	})
}
