package webhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
)

// openAt opens a dispatcher on url with the master keys given, on the clock now.
func openAt(t *testing.T, url string, now func() time.Time, keys ...string) *Dispatcher {
	t.Helper()
	mk, err := ParseMasterKeys([]byte("# comment\n\n" + strings.Join(keys, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d, err := Open(t.Context(), nc, Config{MasterKeys: mk, AllowPrivate: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestSweepMovesSecretsToTheFirstMasterKey: a secret stored in clear is sealed, and a data key
// under an older master key is encrypted again under the first, after which the older key is no
// longer needed; a data key of a master key that is not configured is refused with its id; a
// rotated-out secret past its grace is dropped and its data key erased, and so is a data key no
// endpoint uses.
func TestSweepMovesSecretsToTheFirstMasterKey(t *testing.T) {
	srv := natstest.Start(t)
	url := srv.ClientURL()
	old, newer := NewMasterKey(), NewMasterKey()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	want, _ := parseSecret(secret)
	ctx := t.Context()
	d := openAt(t, url, time.Now, old)
	if err := d.Registry().Register(ctx, "chez-marcel", "wh_sealed", "https://127.0.0.1/a", secret); err != nil {
		t.Fatal(err)
	}
	// A record from before secrets were encrypted.
	legacy, _ := json.Marshal(endpointRecord{ID: "wh_clear", Establishment: "chez-marcel", URL: "https://127.0.0.1/b", Secrets: []signingSecret{{Value: secret}}})
	if _, err := d.endpoints.Put(ctx, endpointKey("chez-marcel", "wh_clear"), legacy); err != nil {
		t.Fatal(err)
	}

	rotated := openAt(t, url, time.Now, newer, old)
	rep, err := rotated.Registry().Sweep(ctx)
	if err != nil || rep.Sealed != 1 || rep.Reencrypted != 1 || rep.Remaining != 0 || rep.Failed != 0 {
		t.Fatalf("Sweep: %+v, %v; want one sealed, one re-encrypted", rep, err)
	}
	if rep, err := rotated.Registry().Sweep(ctx); err != nil || rep != (SweepReport{Endpoints: 2}) {
		t.Errorf("Sweep again: %+v, %v; want nothing done", rep, err)
	}
	only := openAt(t, url, time.Now, newer)
	for _, id := range []string{"wh_sealed", "wh_clear"} {
		rec, _, err := only.getEndpoint(ctx, endpointKey("chez-marcel", id))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Secrets[0].Value != "" || rec.Secrets[0].Sealed == "" {
			t.Errorf("%s: secret not sealed: %+v", id, rec.Secrets[0])
		}
		keys, err := only.keys(ctx, rec, time.Now())
		if err != nil || len(keys) != 1 || !bytes.Equal(keys[0], want) {
			t.Errorf("%s with the new master key only: %v, %v", id, keys, err)
		}
		if _, err := openAt(t, url, time.Now, old).keys(ctx, rec, time.Now()); err == nil || !strings.Contains(err.Error(), "not configured") {
			t.Errorf("%s with the old master key only: %v, want a refusal naming the key", id, err)
		}
	}

	// A rotation with an hour of grace, then a sweep two hours later.
	before, _, _ := only.getEndpoint(ctx, endpointKey("chez-marcel", "wh_sealed"))
	if err := only.Registry().RotateSecret(ctx, "chez-marcel", "wh_sealed", "whsec_"+strings.Repeat("QUFB", 8), time.Hour); err != nil {
		t.Fatal(err)
	}
	orphan, err := only.vault.seal(ctx, "chez-marcel.wh_gone", secret) // a key no record came to use
	if err != nil {
		t.Fatal(err)
	}
	later := openAt(t, url, func() time.Time { return time.Now().Add(2 * time.Hour) }, newer)
	rep, err = later.Registry().Sweep(ctx)
	if err != nil || rep.Pruned != 1 || rep.Erased != 1 {
		t.Fatalf("Sweep after the grace: %+v, %v; want one pruned, one erased", rep, err)
	}
	for _, name := range []string{before.Secrets[0].DataKey, orphan.DataKey} {
		if _, err := later.vault.stream.GetLastMsgForSubject(ctx, subjDataKey+name); err == nil || !strings.Contains(err.Error(), jetstream.ErrMsgNotFound.Error()) {
			t.Errorf("data key %s: %v, want it erased", name, err)
		}
	}
	if _, err := ParseMasterKeys([]byte("c2hvcnQ=")); err == nil {
		t.Error("a short master key was accepted")
	}
}
