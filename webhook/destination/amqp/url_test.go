package amqp_test

import (
	"strings"
	"testing"

	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/amqp"
)

// URLs that cannot be used, and a broker that cannot be reached: errors that say so, naming the
// broker without the password. (The tests against RabbitMQ itself are under the tag brokers.)
func TestOpenErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	const secret = "amqp-secret-pw"
	for url, want := range map[string]string{
		"amqp://guest:" + secret + "@127.0.0.1:1/menus": "amqp 127.0.0.1:1/menus: connect:",
		"amqp://guest:" + secret + "@127.0.0.1:port/":   "url:",
		"amqp://guest:" + secret + "%zz@127.0.0.1/":     "url:",
		"http://guest:" + secret + "@127.0.0.1/":        "url:",
	} {
		_, err := amqp.Open(t.Context(), destination.Spec{Type: destination.TypeAMQP, Exchange: "menus"}, destination.Secrets{URL: url})
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), secret) {
			t.Errorf("Open %s: %v, want an error starting %q without the password", strings.ReplaceAll(url, secret, "…"), err, want)
		}
	}
}

// TLS applies to amqps:// alone: with an amqp:// URL it would be ignored.
func TestOpenRefusesTLSWithoutAMQPS(t *testing.T) {
	t.Parallel()
	_, err := amqp.Open(t.Context(), destination.Spec{Type: destination.TypeAMQP, Exchange: "menus", TLS: &destination.TLS{}},
		destination.Secrets{URL: "amqp://guest:guest@127.0.0.1:1/"})
	if err == nil || !strings.HasPrefix(err.Error(), "tls:") {
		t.Errorf("Open with TLS on amqp://: %v, want an error naming tls", err)
	}
}
