package postgres_test

import (
	"strings"
	"testing"

	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/postgres"
)

// Connection strings that cannot be used, checked without a server: the error says what is
// wrong, never the password.
func TestOpenRefusalsHideThePassword(t *testing.T) {
	t.Parallel()
	spec := destination.Spec{Type: destination.TypePostgres, Table: "menu_events"}
	for _, tc := range []struct{ dsn, secret, want string }{
		{"postgres://postgres:unreachable-pw@127.0.0.1:1/menus?sslmode=disable", "unreachable-pw", "postgres 127.0.0.1:1/menus: open table menu_events:"},
		{"host=127.0.0.1 port=1 user=u password=kv-secret-pw sslmode=disable", "kv-secret-pw", "connection refused"},
		{"postgres://postgres:bad-secret-pw@127.0.0.1:not-a-port/x", "bad-secret-pw", "dsn: not a PostgreSQL connection string"},
		{"host=127.0.0.1 password='open-quote-pw", "open-quote-pw", "dsn: not a PostgreSQL connection string"},
	} {
		sink, err := postgres.Open(t.Context(), spec, destination.Secrets{DSN: tc.dsn})
		if err == nil {
			sink.Close()
			t.Errorf("Open of %s: no error", tc.dsn[:10])
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.secret) {
			t.Errorf("Open: %q, want an error saying %q, without the password", msg, tc.want)
		}
	}
	spec.ContentMode = destination.ModeBinary
	if _, err := postgres.Open(t.Context(), spec, destination.Secrets{DSN: "postgres://127.0.0.1:1/x"}); err == nil || !strings.HasPrefix(err.Error(), "content_mode:") {
		t.Errorf("Open in the binary mode: %v, want a refusal of content_mode", err)
	}
	spec = destination.Spec{Type: destination.TypePostgres, Table: "menus", TLS: &destination.TLS{CA: "not a certificate"}}
	if _, err := postgres.Open(t.Context(), spec, destination.Secrets{DSN: "postgres://127.0.0.1:1/x?sslmode=require"}); err == nil || !strings.HasPrefix(err.Error(), "tls.ca_pem:") {
		t.Errorf("Open with a CA that is none: %v, want a refusal of tls.ca_pem", err)
	}
}
