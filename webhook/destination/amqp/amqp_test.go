//go:build brokers

package amqp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/amqp"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

func revisions(n int) []int64 {
	revs := make([]int64, n)
	for i := range revs {
		revs[i] = int64(i + 1)
	}
	return revs
}

// open opens a sink, closed when the test ends.
func open(t *testing.T, spec destination.Spec, sec destination.Secrets) destination.Sink {
	t.Helper()
	spec.Type = destination.TypeAMQP
	if err := spec.Validate(sec); err != nil {
		t.Fatal(err)
	}
	sink, err := amqp.Open(t.Context(), spec, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink
}

// consume binds a durable queue to the exchange and reads it until the test ends.
func consume(t *testing.T, r *brokertest.RabbitMQ, exchange, kind, queue string, keys ...string) *brokertest.Consumer {
	t.Helper()
	c, err := brokertest.Consume(r.URL(), exchange, kind, queue, keys...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// await returns the consumer's messages once it read n of them, or fails the test.
func await(t *testing.T, c *brokertest.Consumer, n int) []amqp091.Delivery {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if msgs := c.Messages(); len(msgs) >= n {
			return msgs
		} else if time.Now().After(deadline) {
			t.Fatalf("read %d messages, want %d", len(msgs), n)
		}
	}
}

// TestRabbitMQ runs the checks that share one node, which also listens for amqps://.
func TestRabbitMQ(t *testing.T) {
	caFile, certFile, keyFile := natstest.WriteCertificate(t)
	r := brokertest.StartRabbitMQ(t, brokertest.RabbitMQOptions{TLSCert: certFile, TLSKey: keyFile})
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("binary events on the slug's routing key in order", func(t *testing.T) { testBinary(t, r) })
	t.Run("structured events", func(t *testing.T) { testStructured(t, r) })
	t.Run("a message no queue takes is an error", func(t *testing.T) { testReturned(t, r) })
	t.Run("a negative confirmation is an error", func(t *testing.T) { testNacked(t, r) })
	t.Run("an exchange declared otherwise is an error", func(t *testing.T) { testExchangeDeclaredOtherwise(t, r) })
	t.Run("refused credentials never show the password", func(t *testing.T) { testCredentials(t, r) })
	t.Run("amqps with the registration's CA", func(t *testing.T) { testTLS(t, r, string(ca)) })
	t.Run("a context that ended", func(t *testing.T) { testContextEnded(t, r) })
}

func testBinary(t *testing.T, r *brokertest.RabbitMQ) {
	c := consume(t, r, "menus", "topic", "binary", "establishment.#")
	sink := open(t, destination.Spec{Exchange: "menus"}, destination.Secrets{URL: r.URL()})
	var evs []destination.Event
	for rev := int64(1); rev <= 5; rev++ {
		evs = append(evs, brokertest.Events("chez-marcel", rev)...)
		evs = append(evs, brokertest.Events("other", rev)...)
	}
	evs = append(evs, brokertest.Events("bulk", revisions(600)...)...) // more than one batch of confirmations
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	msgs := await(t, c, len(evs))
	byID := map[string]destination.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	last := map[string]int64{}
	for _, m := range msgs {
		e, ok := byID[m.MessageId]
		if !ok {
			t.Fatalf("message %s: not an event published", m.MessageId)
		}
		checkBinary(t, m, e)
		if e.Data.Revision <= last[e.Subject] {
			t.Errorf("%s: revision %d after %d", e.Subject, e.Data.Revision, last[e.Subject])
		}
		last[e.Subject] = e.Data.Revision
	}
	if len(msgs) != len(evs) {
		t.Errorf("read %d messages, want %d", len(msgs), len(evs))
	}
}

// checkBinary checks a message in the binary mode of the CloudEvents AMQP binding: its routing
// key, properties, headers and body, and that the marshaler reads it back.
func checkBinary(t *testing.T, m amqp091.Delivery, e destination.Event) {
	t.Helper()
	if m.RoutingKey != "establishment."+e.Subject || m.DeliveryMode != amqp091.Persistent || m.ContentType != "application/json" ||
		!m.Timestamp.Equal(e.Time.Truncate(time.Second)) {
		t.Errorf("message %s: routing key %q, delivery mode %d, content type %q, timestamp %v",
			e.ID, m.RoutingKey, m.DeliveryMode, m.ContentType, m.Timestamp)
	}
	for _, a := range e.Attributes() {
		if v, ok := m.Headers["cloudEvents_"+a.Name]; a.Name != "datacontenttype" && v != a.Value {
			t.Errorf("message %s: header cloudEvents_%s = %v, want %q", e.ID, a.Name, v, a.Value)
		} else if a.Name == "datacontenttype" && ok {
			t.Errorf("message %s: datacontenttype in a header, not in content_type", e.ID)
		}
	}
	if string(m.Body) != string(e.DataJSON()) {
		t.Errorf("message %s: body %s, want %s", e.ID, m.Body, e.DataJSON())
	}
	msg, err := amqp.Marshaler{}.Unmarshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range e.Attributes() {
		if got := msg.Metadata.Get(a.Name); got != a.Value {
			t.Errorf("message %s unmarshalled: %s = %q, want %q", e.ID, a.Name, got, a.Value)
		}
	}
}

func testStructured(t *testing.T, r *brokertest.RabbitMQ) {
	c := consume(t, r, "menus-structured", "topic", "structured", "establishment.*")
	sink := open(t, destination.Spec{Exchange: "menus-structured", ContentMode: destination.ModeStructured}, destination.Secrets{URL: r.URL()})
	evs := brokertest.Events("chez-marcel", 7, 8)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	for i, m := range await(t, c, 2) {
		var ev struct {
			SpecVersion, ID, Source, Type, Subject, Time, DataContentType string
			Data                                                          events.Change
		}
		if err := json.Unmarshal(m.Body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.SpecVersion != "1.0" || ev.ID != evs[i].ID || ev.Type != destination.EventType || ev.Subject != "chez-marcel" ||
			ev.Data.Revision != evs[i].Data.Revision || ev.DataContentType != "application/json" {
			t.Errorf("event %d: %+v", i, ev)
		}
		if m.ContentType != destination.StructuredContentType || m.RoutingKey != "establishment.chez-marcel" || m.MessageId != evs[i].ID {
			t.Errorf("message %d: content type %q, routing key %q, id %q", i, m.ContentType, m.RoutingKey, m.MessageId)
		}
		msg, err := amqp.Marshaler{}.Unmarshal(m)
		if err != nil || msg.UUID != evs[i].ID || msg.Metadata.Get("subject") != "chez-marcel" || string(msg.Payload) != string(evs[i].DataJSON()) {
			t.Errorf("message %d unmarshalled: %+v (%v)", i, msg, err)
		}
	}
}

// A direct exchange with a routing key of its own, and a queue for one establishment only: the
// other's message comes back.
func testReturned(t *testing.T, r *brokertest.RabbitMQ) {
	c := consume(t, r, "menus-direct", "direct", "direct", "menus.chez-marcel.changed")
	sink := open(t, destination.Spec{Exchange: "menus-direct", ExchangeType: "direct", RoutingKey: "menus.{establishment}.changed"},
		destination.Secrets{URL: r.URL()})
	if err := sink.Publish(t.Context(), brokertest.Events("chez-marcel", 1)); err != nil {
		t.Fatal(err)
	}
	if m := await(t, c, 1)[0]; m.RoutingKey != "menus.chez-marcel.changed" {
		t.Errorf("routing key %q", m.RoutingKey)
	}
	err := sink.Publish(t.Context(), brokertest.Events("other", 1))
	if err == nil || !strings.Contains(err.Error(), "menus-direct") || !strings.Contains(err.Error(), `"menus.other.changed"`) ||
		!strings.Contains(err.Error(), "no queue") {
		t.Errorf("Publish of a message no queue takes: %v, want an error naming the exchange and the routing key", err)
	}
	if err := sink.Publish(t.Context(), brokertest.Events("chez-marcel", 2)); err != nil {
		t.Errorf("Publish after a returned message: %v", err)
	}
}

// A queue that refuses messages beyond the first: RabbitMQ confirms negatively.
func testNacked(t *testing.T, r *brokertest.RabbitMQ) {
	admin := dial(t, r)
	ch, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("menus-full", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	args := amqp091.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"}
	if _, err := ch.QueueDeclare("full", true, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("full", "#", "menus-full", false, nil); err != nil {
		t.Fatal(err)
	}
	sink := open(t, destination.Spec{Exchange: "menus-full"}, destination.Secrets{URL: r.URL()})
	err = sink.Publish(t.Context(), brokertest.Events("chez-marcel", 1, 2, 3))
	if err == nil || !strings.Contains(err.Error(), "negative confirmation") {
		t.Fatalf("Publish to a full queue: %v, want a negative confirmation", err)
	}
	if _, err := ch.QueuePurge("full", false); err != nil {
		t.Fatal(err)
	}
	if err := sink.Publish(t.Context(), brokertest.Events("chez-marcel", 4)); err != nil {
		t.Errorf("Publish once the queue has room: %v", err)
	}
}

func dial(t *testing.T, r *brokertest.RabbitMQ) *amqp091.Connection {
	t.Helper()
	conn, err := amqp091.Dial(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func testExchangeDeclaredOtherwise(t *testing.T, r *brokertest.RabbitMQ) {
	ch, err := dial(t, r).Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("menus-fanout", "fanout", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	spec := destination.Spec{Type: destination.TypeAMQP, Exchange: "menus-fanout"}
	sec := destination.Secrets{URL: r.URL()}
	if err := spec.Validate(sec); err != nil {
		t.Fatal(err)
	}
	_, err = amqp.Open(t.Context(), spec, sec)
	if err == nil || !strings.Contains(err.Error(), "declare exchange menus-fanout (topic, durable)") || !strings.Contains(err.Error(), "PRECONDITION_FAILED") {
		t.Errorf("Open on an exchange of another type: %v", err)
	}
}

func testCredentials(t *testing.T, r *brokertest.RabbitMQ) {
	const secret = "wrong-secret-pw"
	_, err := amqp.Open(t.Context(), destination.Spec{Type: destination.TypeAMQP, Exchange: "menus"}, destination.Secrets{URL: r.URLWithPassword(secret)})
	if err == nil || !strings.Contains(err.Error(), r.Addr()) || strings.Contains(err.Error(), secret) ||
		!strings.Contains(err.Error(), "username or password not allowed") {
		t.Errorf("refused credentials: %v, want the broker named and the refusal", err)
	}
}

func testTLS(t *testing.T, r *brokertest.RabbitMQ, ca string) {
	c := consume(t, r, "menus-tls", "topic", "tls", "#")
	sink := open(t, destination.Spec{Exchange: "menus-tls", TLS: &destination.TLS{CA: ca}}, destination.Secrets{URL: r.TLSURL()})
	evs := brokertest.Events("chez-marcel", 1)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if m := await(t, c, 1)[0]; m.MessageId != evs[0].ID {
		t.Errorf("message %s, want %s", m.MessageId, evs[0].ID)
	}
	// Without the CA, the node's certificate is not trusted.
	_, err := amqp.Open(t.Context(), destination.Spec{Type: destination.TypeAMQP, Exchange: "menus-tls"}, destination.Secrets{URL: r.TLSURL()})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("amqps without the CA: %v, want a certificate error", err)
	}
}

func testContextEnded(t *testing.T, r *brokertest.RabbitMQ) {
	sink := open(t, destination.Spec{Exchange: "menus"}, destination.Secrets{URL: r.URL()})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sink.Publish(ctx, brokertest.Events("chez-marcel", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a context that ended: %v", err)
	}
	if err := sink.Publish(t.Context(), brokertest.Events("chez-marcel", 2)); err != nil {
		t.Errorf("Publish after: %v", err)
	}
}

// The node stopped: a publication fails and says why; started again, the sink publishes, and the
// messages confirmed before the stop are still in the durable queue, in order.
func TestRabbitMQAwayThenBackLosesNothing(t *testing.T) {
	r := brokertest.StartRabbitMQ(t, brokertest.RabbitMQOptions{})
	first, err := brokertest.Consume(r.URL(), "menus", "topic", "kept", "establishment.#")
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // the queue stays, and keeps what comes while nobody reads
	sink := open(t, destination.Spec{Exchange: "menus"}, destination.Secrets{URL: r.URL()})
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1, 2)); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	err = sink.Publish(t.Context(), brokertest.Events("a", 3))
	if err == nil || !strings.Contains(err.Error(), r.Addr()) {
		t.Fatalf("Publish with the node stopped: %v, want an error naming it", err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = sink.Publish(t.Context(), brokertest.Events("a", 3)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Publish once the node is back: %v", err)
		}
	}
	msgs := await(t, consume(t, r, "menus", "topic", "kept", "establishment.#"), 3)
	var got []string
	for _, m := range msgs {
		got = append(got, m.MessageId)
	}
	want := fmt.Sprint([]string{brokertest.Events("a", 1)[0].ID, brokertest.Events("a", 2)[0].ID, brokertest.Events("a", 3)[0].ID})
	if fmt.Sprint(got) != want {
		t.Errorf("the queue holds %v, want %v", got, want)
	}
}
