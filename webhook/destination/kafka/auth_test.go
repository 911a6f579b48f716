package kafka_test

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
	"github.com/opencarte/publisher/webhook/destination/kafka"
)

// TestSASL publishes as a SASL user of a broker that requires one, for each mechanism, read by
// a consumer authenticated the same way; a wrong password is refused by Open, which does not show
// it.
func TestSASL(t *testing.T) {
	t.Parallel()
	for mechanism, auth := range map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "menus", Pass: "s3cret-pw"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "menus", Pass: "s3cret-pw"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "menus", Pass: "s3cret-pw"}.AsSha512Mechanism(),
	} {
		t.Run(mechanism, func(t *testing.T) {
			t.Parallel()
			k := brokertest.StartKafka(t, 1, "menus")
			if err := k.Require(brokertest.KafkaAuth{Mechanism: mechanism, User: "menus", Password: "s3cret-pw"}); err != nil {
				t.Fatal(err)
			}
			spec := kafkaSpec(k, destination.ModeBinary)
			spec.SASL = &destination.SASL{Mechanism: mechanism, Username: "menus"}
			if _, err := kafka.Open(t.Context(), spec, destination.Secrets{Password: "wr0ng-pw"}); err == nil || strings.Contains(err.Error(), "wr0ng-pw") {
				t.Errorf("Open with a wrong password: %v, want a refusal without the password", err)
			}
			sink := openSpec(t, spec, destination.Secrets{Password: "s3cret-pw"})
			evs := brokertest.Events("chez-marcel", 1)
			if err := sink.Publish(t.Context(), evs); err != nil {
				t.Fatal(err)
			}
			f, err := brokertest.Follow(k.Brokers(), "menus", kgo.SASL(auth))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			checkBinaryRecord(t, await(t, f, 1)[0], evs[0])
		})
	}
}

// TestTLS publishes to a broker listening with TLS, trusting its certificate's authority; without
// it, Open fails.
func TestTLS(t *testing.T) {
	t.Parallel()
	caFile, certFile, keyFile := natstest.WriteCertificate(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	k := brokertest.StartKafka(t, 1, "menus")
	if err := k.Require(brokertest.KafkaAuth{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}); err != nil {
		t.Fatal(err)
	}
	spec := kafkaSpec(k, destination.ModeBinary)
	spec.TLS = &destination.TLS{}
	if _, err := kafka.Open(t.Context(), spec, destination.Secrets{}); err == nil {
		t.Error("Open trusting the system's authorities only: no error")
	}
	spec.TLS.CA = string(ca)
	sink := openSpec(t, spec, destination.Secrets{})
	evs := brokertest.Events("chez-marcel", 1)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	client, err := spec.TLS.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := brokertest.Follow(k.Brokers(), "menus", kgo.DialTLSConfig(client))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkBinaryRecord(t, await(t, f, 1)[0], evs[0])
}

// TestOpenRefusesABadRegistration: each refusal names the field, and none shows a secret.
func TestOpenRefusesABadRegistration(t *testing.T) {
	t.Parallel()
	good := func() destination.Spec {
		return destination.Spec{Type: destination.TypeKafka, Brokers: []string{"127.0.0.1:9092"}, Topic: "menus"}
	}
	for _, tc := range []struct {
		field string
		edit  func(*destination.Spec)
		sec   destination.Secrets
	}{
		{"type", func(s *destination.Spec) { s.Type = destination.TypeAMQP }, destination.Secrets{}},
		{"brokers", func(s *destination.Spec) { s.Brokers = nil }, destination.Secrets{}},
		{"brokers", func(s *destination.Spec) { s.Brokers = []string{"kafka"} }, destination.Secrets{}},
		{"topic", func(s *destination.Spec) { s.Topic = "menus/all" }, destination.Secrets{}},
		{"content_mode", func(s *destination.Spec) { s.ContentMode = "batched" }, destination.Secrets{}},
		{"sasl.mechanism", func(s *destination.Spec) { s.SASL = &destination.SASL{Mechanism: "GSSAPI", Username: "u"} }, destination.Secrets{Password: "s3cret-pw"}},
		{"sasl", func(s *destination.Spec) { s.SASL = &destination.SASL{Mechanism: "PLAIN", Username: "u"} }, destination.Secrets{}},
		{"tls.ca_pem", func(s *destination.Spec) { s.TLS = &destination.TLS{CA: "not a certificate"} }, destination.Secrets{}},
		{"tls.cert_pem", func(s *destination.Spec) { s.TLS = &destination.TLS{Cert: "not a certificate"} }, destination.Secrets{TLSKey: "s3cret-key"}},
	} {
		spec := good()
		tc.edit(&spec)
		_, err := kafka.Open(t.Context(), spec, tc.sec)
		var fe *destination.FieldError
		switch {
		case err == nil:
			t.Errorf("%s: Open accepted %+v", tc.field, spec)
		case errors.As(err, &fe) && fe.Field != tc.field, !strings.Contains(err.Error(), tc.field+":"):
			t.Errorf("%s: Open refused with %q, want a refusal naming %s", tc.field, err, tc.field)
		case strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the refusal shows a secret: %v", tc.field, err)
		}
	}
}
