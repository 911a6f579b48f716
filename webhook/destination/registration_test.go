package destination_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/opencarte/publisher/webhook/destination"
)

func TestParseRegistration(t *testing.T) {
	t.Parallel()
	spec, sec, err := destination.ParseRegistration([]byte(`{"type": "amqp", "url": "amqp://menus:s3cret@rabbit:5672/", "exchange": "menus", "establishments": ["chez-marcel"], "start": "all"}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.URL != "" || sec.URL != "amqp://menus:s3cret@rabbit:5672/" || spec.Exchange != "menus" || spec.ExchangeType != "topic" ||
		spec.RoutingKey != "establishment.{establishment}" || spec.ContentMode != destination.ModeBinary || spec.Start != destination.StartAll {
		t.Errorf("amqp: spec %+v, secrets %+v", spec, sec)
	}
	spec, sec, err = destination.ParseRegistration([]byte(`{"type": "kafka", "brokers": ["k1:9092"], "topic": "menus", "sasl": {"mechanism": "PLAIN", "username": "u", "password": "pw"}}`))
	if err != nil || spec.SASL.Username != "u" || sec.Password != "pw" || spec.Start != destination.StartNow {
		t.Errorf("kafka: spec %+v, secrets %+v, %v", spec, sec, err)
	}
	spec, sec, err = destination.ParseRegistration([]byte(`{"type": "nats", "url": "nats://other:4222", "subject_prefix": "menus.changes", "token": "tok"}`))
	if err != nil || spec.URL != "nats://other:4222" || sec.Token != "tok" || sec.URL != "" {
		t.Errorf("nats: spec %+v, secrets %+v, %v", spec, sec, err)
	}
	spec, sec, err = destination.ParseRegistration([]byte(`{"type": "postgres", "dsn": "postgres://u:pw@db/app", "table": "outbox.menu_events"}`))
	if err != nil || spec.ContentMode != destination.ModeStructured || sec.DSN == "" {
		t.Errorf("postgres: spec %+v, %v", spec, err)
	}
}

func TestParseRegistrationRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, field string }{
		{`[]`, "body"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t"} {}`, "body"},
		{`{"type": "smtp"}`, "type"},
		{`{"type": "kafka", "topic": "t"}`, "brokers"},
		{`{"type": "kafka", "brokers": ["k"], "topic": "t"}`, "brokers"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "a/b"}`, "topic"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "sasl": {"mechanism": "GSSAPI", "username": "u", "password": "secret-pw"}}`, "sasl.mechanism"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "exchange": "x"}`, "exchange"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "password": "secret-pw"}`, "password"},
		{`{"type": "kafka", "brokers": 3, "topic": "t"}`, "brokers"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "colour": "red"}`, "colour"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "start": "yesterday"}`, "start"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "content_mode": "batched"}`, "content_mode"},
		{`{"type": "amqp", "url": "http://u:secret-pw@rabbit/", "exchange": "x"}`, "url"},
		{`{"type": "amqp", "url": "amqp://rabbit/", "exchange": "amq.topic"}`, "exchange"},
		{`{"type": "amqp", "url": "amqp://rabbit/", "exchange": "x", "exchange_type": "random"}`, "exchange_type"},
		{`{"type": "nats", "url": "nats://u:secret-pw@other:4222", "subject_prefix": "p"}`, "url"},
		{`{"type": "nats", "url": "nats://other:4222", "subject_prefix": "p.>"}`, "subject_prefix"},
		{`{"type": "nats", "url": "nats://other:4222", "subject_prefix": "p", "token": "secret-pw", "creds": "x"}`, "credentials"},
		{`{"type": "nats", "url": "nats://other:4222", "subject_prefix": "p", "user": "u"}`, "user"},
		{`{"type": "postgres", "table": "t"}`, "dsn"},
		{`{"type": "postgres", "dsn": "postgres://u:secret-pw@db/app", "table": "Robert'); DROP TABLE x;--"}`, "table"},
		{`{"type": "postgres", "dsn": "postgres://db/app", "table": "t", "tls": {"cert_pem": "x"}}`, "tls.cert_pem"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "establishments": ["chez-marcel", "Chez Marcel"]}`, "establishments[1]"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "establishments": ["a", "b", "a"]}`, "establishments[2]"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "tls": {"ca_pem": "not a certificate"}}`, "tls.ca_pem"},
		{`{"type": "amqp", "url": "amqp://u:secret-pw@rabbit/", "exchange": "x", "tls": {"server_name": "rabbit"}}`, "tls"},
		{`{"type": "amqp", "url": "amqps://rabbit/", "exchange": "x", "routing_key": "` + strings.Repeat("k", 192) + `.{establishment}"}`, "routing_key"},
		{`{"type": "postgres", "dsn": "postgres://db/app", "table": "t", "content_mode": "binary"}`, "content_mode"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "tls": {"ca": "x"}}`, "tls.ca"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "tls": {"ca_pem": 1}}`, "tls.ca_pem"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "tls": []}`, "tls"},
		{`{"type": "kafka", "brokers": ["k:9092"], "topic": "t", "sasl": {"mechanism": "PLAIN", "user": "u", "password": "secret-pw"}}`, "sasl.user"},
	} {
		_, _, err := destination.ParseRegistration([]byte(tc.body))
		var fe *destination.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a refusal of %s", tc.body, err, tc.field)
			continue
		}
		if strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%s: the refusal shows the secret: %v", tc.body, err)
		}
	}
}

func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"type": "kafka", "brokers": ["k:9092"], "topic": "t"}`))
	f.Add([]byte(`{"type": "amqp", "url": "amqp://u:p@r/", "exchange": "x", "routing_key": "a.{establishment}"}`))
	f.Add([]byte(`{"type": "nats", "url": "nats://n:4222", "subject_prefix": "p", "tls": {"ca_pem": ""}}`))
	f.Add([]byte(`{"type": "postgres", "dsn": "host=db", "table": "s.t", "establishments": ["a"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, sec, err := destination.ParseRegistration(body)
		if err != nil {
			var fe *destination.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("refusal without a field: %v", err)
			}
			return
		}
		if again := spec; again.Validate(sec) != nil {
			t.Fatalf("a registration accepted does not validate again: %+v", spec)
		}
	})
}
