package amqp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/opencarte/publisher/webhook/destination"
)

// maxRoutingKey is AMQP's limit on a routing key, in bytes.
const maxRoutingKey = 255

// Check refuses, naming the field, a registration that Open would refuse before connecting: a
// URL that is not a valid AMQP URI.
func Check(spec destination.Spec, sec destination.Secrets) error {
	_, err := parseURL(sec.URL)
	return err
}

// Open connects to the destination's broker and declares its exchange, so that a wrong URL,
// refused credentials or an exchange declared otherwise are told at once. A Publish that fails
// drops the connection and the next one connects again: the sink is usable again once the broker
// is back.
func Open(ctx context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	target, err := parseURL(sec.URL)
	if err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if spec.TLS != nil {
		if !strings.HasPrefix(target, "amqps ") {
			return nil, &destination.FieldError{Field: "tls", Reason: "needs an amqps:// URL"}
		}
		if tlsConfig, err = spec.TLS.ClientConfig(sec.TLSKey); err != nil {
			return nil, err
		}
	}
	if spec.Exchange == "" {
		return nil, &destination.FieldError{Field: "exchange", Reason: "is required"}
	}
	kind := spec.ExchangeType
	if kind == "" {
		kind = "topic"
	}
	p := &publisher{url: sec.URL, target: target, tls: tlsConfig, kind: kind, secrets: secretsOf(sec.URL),
		marshaler: Marshaler{Structured: spec.ContentMode == destination.ModeStructured}}
	p.mu.Lock()
	err = p.connect(ctx, spec.Exchange)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	routingKey := spec.RoutingKey
	if routingKey == "" {
		routingKey = "establishment.{establishment}"
	}
	return &sink{p: p, exchange: spec.Exchange, routingKey: routingKey}, nil
}

// parseURL checks an amqp:// or amqps:// URL and returns how errors name its broker: host, port
// and virtual host, never the user's password. Its own errors never show the URL.
func parseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "amqp" && u.Scheme != "amqps" || u.Host == "" {
		return "", &destination.FieldError{Field: "url", Reason: "must be an amqp:// or amqps:// URL (percent-encode reserved characters of the user and password)"}
	}
	uri, err := amqp.ParseURI(raw)
	if err != nil || uri.Port < 1 || uri.Port > 65535 {
		return "", &destination.FieldError{Field: "url", Reason: "not a valid AMQP URI (its port, heartbeat, connection_timeout or channel_max)"}
	}
	return u.Scheme + " " + net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port)) + "/" + strings.TrimPrefix(uri.Vhost, "/"), nil
}

// secretsOf returns what an error must never show: the URL, and the password as given in it and
// decoded.
func secretsOf(raw string) []string {
	secrets := []string{raw}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets = append(secrets, pw, url.PathEscape(pw), url.QueryEscape(pw))
		}
	}
	return secrets
}

// sink turns events into the binding's messages and publishes them to the exchange, each with
// its establishment's routing key.
type sink struct {
	p          *publisher
	exchange   string
	routingKey string
}

func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	if len(evs) == 0 {
		return nil
	}
	msgs := make([]*message.Message, 0, len(evs))
	for _, e := range evs {
		key := strings.ReplaceAll(s.routingKey, "{establishment}", e.Subject)
		if len(key) > maxRoutingKey {
			return fmt.Errorf("routing_key: %q is longer than %d bytes", key, maxRoutingKey)
		}
		msgs = append(msgs, eventMessage(ctx, e, key))
	}
	return s.p.Publish(s.exchange, msgs...)
}

func (s *sink) Close() error { return s.p.Close() }
