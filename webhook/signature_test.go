package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/webhook"
)

// keyOf decodes a "whsec_" secret, as a receiver would.
func keyOf(tb testing.TB, secret string) []byte {
	tb.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		tb.Fatalf("decode secret: %v", err)
	}
	return key
}

// serviceSignatures checks the X-Service-Signature header of r against the receiver's clock and
// returns the v1 values, recomputing the HMAC independently of the package.
func serviceSignatures(tb testing.TB, r received) (ts int64, v1 []string) {
	tb.Helper()
	for part := range strings.SplitSeq(r.Header.Get("X-Service-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("t=%q: %v", v, err)
			}
			ts = n
		case "v1":
			v1 = append(v1, v)
		}
	}
	return ts, v1
}

func serviceMAC(key []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func standardMAC(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestSignaturesVerifyIndependently recomputes both signatures of a real delivery, then rotates
// the secret: during the grace period both secrets sign, after it only the new one.
func TestSignaturesVerifyIndependently(t *testing.T) {
	rcv := newReceiver(t, nil)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		nc := connect(t, startNATS(t, dir))
		d := openDispatcher(t, nc, testConfig(t, rcv))
		register(t, d, "chez-marcel", "wh_a", rcv.url("/hook?x=1"), secretA)
		sigs := openSignals(t, nc)
		run(t, d)
		start := time.Now()

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, time.Minute)
		reqs := rcv.requests()
		if len(reqs) != 1 {
			t.Fatalf("got %d requests, want 1", len(reqs))
		}
		r := reqs[0]
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type: got %q", ct)
		}
		ts, v1 := serviceSignatures(t, r)
		if want := start.Add(30 * time.Second).Unix(); ts != want {
			t.Errorf("signature time: got %d, want %d", ts, want)
		}
		if len(v1) != 1 || !hmac.Equal([]byte(v1[0]), []byte(serviceMAC(keyOf(t, secretA), ts, r.Body))) {
			t.Errorf("X-Service-Signature %q does not verify", r.Header.Get("X-Service-Signature"))
		}
		id := r.Header.Get("webhook-id")
		if id != payloadOf(t, r).ID {
			t.Errorf("webhook-id %q differs from the payload id %q", id, payloadOf(t, r).ID)
		}
		if got := r.Header.Get("webhook-timestamp"); got != strconv.FormatInt(ts, 10) {
			t.Errorf("webhook-timestamp: got %s, want %d", got, ts)
		}
		if got, want := r.Header.Get("webhook-signature"), standardMAC(keyOf(t, secretA), id, ts, r.Body); got != want {
			t.Errorf("webhook-signature: got %q, want %q", got, want)
		}
		// A tampered body or a replayed timestamp does not verify.
		if hmac.Equal([]byte(v1[0]), []byte(serviceMAC(keyOf(t, secretA), ts+1, r.Body))) {
			t.Errorf("signature verifies with another timestamp")
		}

		// Rotation with a one-hour grace period.
		if err := d.Registry().RotateSecret(t.Context(), "chez-marcel", "wh_a", secretB, time.Hour); err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		ep, err := d.Registry().Endpoint(t.Context(), "chez-marcel", "wh_a")
		if err != nil {
			t.Fatalf("Endpoint: %v", err)
		}
		if want := time.Now().Add(time.Hour); !ep.PreviousSecretUntil.Equal(want) {
			t.Errorf("previous secret until %s, want %s", ep.PreviousSecretUntil, want)
		}
		publish(t, sigs, "chez-marcel", 2, "menus")
		sleepUntil(start, 2*time.Minute)
		r = rcv.requests()[1]
		ts, v1 = serviceSignatures(t, r)
		if len(v1) != 2 ||
			!hmac.Equal([]byte(v1[0]), []byte(serviceMAC(keyOf(t, secretB), ts, r.Body))) ||
			!hmac.Equal([]byte(v1[1]), []byte(serviceMAC(keyOf(t, secretA), ts, r.Body))) {
			t.Errorf("during the grace period: X-Service-Signature %q, want the new then the old secret's", r.Header.Get("X-Service-Signature"))
		}
		id = r.Header.Get("webhook-id")
		want := standardMAC(keyOf(t, secretB), id, ts, r.Body) + " " + standardMAC(keyOf(t, secretA), id, ts, r.Body)
		if got := r.Header.Get("webhook-signature"); got != want {
			t.Errorf("during the grace period: webhook-signature %q, want %q", got, want)
		}

		sleepUntil(start, 2*time.Hour)
		publish(t, sigs, "chez-marcel", 3, "hours")
		sleepUntil(start, 3*time.Hour)
		r = rcv.requests()[2]
		ts, v1 = serviceSignatures(t, r)
		if len(v1) != 1 || !hmac.Equal([]byte(v1[0]), []byte(serviceMAC(keyOf(t, secretB), ts, r.Body))) {
			t.Errorf("after the grace period: X-Service-Signature %q, want the new secret's only", r.Header.Get("X-Service-Signature"))
		}
		if got, want := r.Header.Get("webhook-signature"), standardMAC(keyOf(t, secretB), r.Header.Get("webhook-id"), ts, r.Body); got != want {
			t.Errorf("after the grace period: webhook-signature %q, want %q", got, want)
		}
	})
}

func TestPingRedeliverAndLog(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		cfg := testConfig(t, rcv)
		cfg.Jitter = -1
		d, sigs := runWithEndpoint(t, dir, cfg, rcv)
		start := time.Now()

		a, err := d.Ping(t.Context(), "chez-marcel", "wh_a")
		if err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if !a.OK() || a.StatusCode != 200 || a.Number != 1 {
			t.Errorf("ping attempt: got %+v, want a 200", a)
		}
		ping := payloadOf(t, rcv.requests()[0])
		if ping.Type != webhook.EventPing || ping.Data.EndpointID != "wh_a" || ping.Data.Establishment != "chez-marcel" {
			t.Errorf("ping payload: got %+v", ping)
		}
		if _, err := d.Ping(t.Context(), "chez-marcel", "wh_nope"); !errors.Is(err, webhook.ErrEndpointNotFound) {
			t.Errorf("Ping unknown endpoint: got %v, want ErrEndpointNotFound", err)
		}

		publish(t, sigs, "chez-marcel", 1, "hours")
		sleepUntil(start, time.Minute)
		first := rcv.requests()[1]
		delivered := payloadOf(t, first)

		// Redelivery: same id and body, freshly signed; the receiver fails once, then accepts.
		sleepUntil(start, 10*time.Minute)
		if err := d.Redeliver(t.Context(), delivered.ID); err != nil {
			t.Fatalf("Redeliver: %v", err)
		}
		if err := d.Redeliver(t.Context(), delivered.ID); !errors.Is(err, webhook.ErrDeliveryInProgress) {
			t.Errorf("Redeliver while pending: got %v, want ErrDeliveryInProgress", err)
		}
		if err := d.Redeliver(t.Context(), "msg_unknown"); !errors.Is(err, webhook.ErrDeliveryNotFound) {
			t.Errorf("Redeliver unknown: got %v, want ErrDeliveryNotFound", err)
		}
		sleepUntil(start, time.Hour)
		reqs := rcv.requests()
		if len(reqs) != 4 {
			t.Fatalf("got %d requests, want ping, delivery and two redelivery attempts", len(reqs))
		}
		for _, r := range reqs[2:] {
			if r.Header.Get("webhook-id") != delivered.ID || string(r.Body) != string(first.Body) {
				t.Errorf("redelivery: id %s body %s, want %s %s", r.Header.Get("webhook-id"), r.Body, delivered.ID, first.Body)
			}
		}
		if sentAt(t, reqs[2]).Equal(sentAt(t, first)) {
			t.Errorf("redelivery signed with the original time")
		}

		log, err := d.DeliveryLog(t.Context(), "wh_a", 0)
		if err != nil {
			t.Fatalf("DeliveryLog: %v", err)
		}
		if len(log) != 2 || log[0].ID != delivered.ID || log[1].ID != ping.ID {
			t.Fatalf("log: got %d records, want the delivery then the ping", len(log))
		}
		rec := log[0]
		if rec.Status != webhook.StatusDelivered || rec.Redeliveries != 1 || len(rec.Attempts) != 3 {
			t.Fatalf("record: got status %s, %d redeliveries, %d attempts", rec.Status, rec.Redeliveries, len(rec.Attempts))
		}
		want := []struct{ number, redelivery, status int }{{1, 0, 200}, {1, 1, 500}, {2, 1, 200}}
		for i, w := range want {
			a := rec.Attempts[i]
			if a.Number != w.number || a.Redelivery != w.redelivery || a.StatusCode != w.status {
				t.Errorf("attempt %d: got number %d redelivery %d status %d, want %+v", i, a.Number, a.Redelivery, a.StatusCode, w)
			}
		}
		if string(rec.Payload) != string(first.Body) {
			t.Errorf("logged payload %s, want the body sent %s", rec.Payload, first.Body)
		}
		one, err := d.Delivery(t.Context(), delivered.ID)
		if err != nil || one.ID != delivered.ID {
			t.Errorf("Delivery: got %s, %v", one.ID, err)
		}
		if log, err := d.DeliveryLog(t.Context(), "wh_a", 1); err != nil || len(log) != 1 || log[0].ID != delivered.ID {
			t.Errorf("DeliveryLog limit 1: got %d records, %v", len(log), err)
		}
		// The log's JSON never holds a secret.
		data, err := json.Marshal(log)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "whsec_") || !strings.Contains(string(data), `"latency_ms"`) {
			t.Errorf("log JSON: %s", data)
		}
		eps, err := d.Registry().Endpoints(t.Context(), "chez-marcel")
		if err != nil || len(eps) != 1 {
			t.Fatalf("Endpoints: %d, %v", len(eps), err)
		}
		if data, _ := json.Marshal(eps); strings.Contains(string(data), "whsec_") {
			t.Errorf("endpoint JSON holds a secret: %s", data)
		}
	})
}
