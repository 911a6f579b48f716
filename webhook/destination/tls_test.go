package destination_test

import (
	"os"
	"strings"
	"testing"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
)

func TestTLSClientConfig(t *testing.T) {
	caFile, certFile, keyFile := natstest.WriteCertificate(t)
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ca, cert, key := read(caFile), read(certFile), read(keyFile)
	cfg, err := (&destination.TLS{CA: ca, ServerName: "broker.example", Cert: cert}).ClientConfig(key)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || cfg.ServerName != "broker.example" || len(cfg.Certificates) != 1 {
		t.Errorf("config %+v: want the CA, the name and the client certificate", cfg)
	}
	if _, err := (&destination.TLS{CA: "not a certificate"}).ClientConfig(""); err == nil || !strings.HasPrefix(err.Error(), "tls.ca_pem:") {
		t.Errorf("a CA without a certificate: %v, want an error naming tls.ca_pem", err)
	}
	wrongKey := strings.Replace(key, "\n", "\nAAAA", 2)
	_, err = (&destination.TLS{Cert: cert}).ClientConfig(wrongKey)
	if err == nil || !strings.HasPrefix(err.Error(), "tls.cert_pem:") || strings.Contains(err.Error(), "AAAA") {
		t.Errorf("a certificate with a wrong key: %v, want an error naming tls.cert_pem without the key", err)
	}
}
