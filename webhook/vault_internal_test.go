package webhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events/natstest"
)

// TestReencryptMovesSecretsToTheFirstMasterKey: a secret stored in clear is sealed, and a data
// key under an older master key is encrypted again under the first, after which the older key is
// no longer needed; a data key of a master key that is not configured is refused with its id.
func TestReencryptMovesSecretsToTheFirstMasterKey(t *testing.T) {
	srv := natstest.Start(t)
	old, newer := NewMasterKey(), NewMasterKey()
	open := func(keys ...string) *Dispatcher {
		t.Helper()
		mk, err := ParseMasterKeys([]byte("# comment\n\n" + strings.Join(keys, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		d, err := Open(t.Context(), nc, Config{MasterKeys: mk, AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	want, _ := parseSecret(secret)
	ctx := t.Context()
	d := open(old)
	if err := d.Registry().Register(ctx, "chez-marcel", "wh_sealed", "https://127.0.0.1/a", secret); err != nil {
		t.Fatal(err)
	}
	// A record from before secrets were encrypted.
	legacy, _ := json.Marshal(endpointRecord{ID: "wh_clear", Establishment: "chez-marcel", URL: "https://127.0.0.1/b", Secrets: []signingSecret{{Value: secret}}})
	if _, err := d.endpoints.Put(ctx, endpointKey("chez-marcel", "wh_clear"), legacy); err != nil {
		t.Fatal(err)
	}

	rotated := open(newer, old)
	n, err := rotated.Registry().Reencrypt(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Reencrypt: %d, %v; want 2", n, err)
	}
	if n, err := rotated.Registry().Reencrypt(ctx); err != nil || n != 0 {
		t.Errorf("Reencrypt again: %d, %v; want 0", n, err)
	}
	only := open(newer)
	for _, id := range []string{"wh_sealed", "wh_clear"} {
		rec, _, err := only.getEndpoint(ctx, endpointKey("chez-marcel", id))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Secrets[0].Value != "" || rec.Secrets[0].Sealed == "" {
			t.Errorf("%s: secret not sealed: %+v", id, rec.Secrets[0])
		}
		keys, err := only.keys(ctx, rec, only.cfg.Now())
		if err != nil || len(keys) != 1 || !bytes.Equal(keys[0], want) {
			t.Errorf("%s with the new master key only: %v, %v", id, keys, err)
		}
		if _, err := open(old).keys(ctx, rec, only.cfg.Now()); err == nil || !strings.Contains(err.Error(), "not configured") {
			t.Errorf("%s with the old master key only: %v, want a refusal naming the key", id, err)
		}
	}
	if _, err := ParseMasterKeys([]byte("c2hvcnQ=")); err == nil {
		t.Error("a short master key was accepted")
	}
}
