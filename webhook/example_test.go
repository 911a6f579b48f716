package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// tolerance is how far a signature's time may be from the receiver's clock. Refusing older
// signatures stops a captured request from being replayed later.
const tolerance = 5 * time.Minute

// verifyServiceSignature checks an X-Service-Signature header, "t=<unix>,v1=<hex>[,v1=<hex>]",
// against the raw body, as a receiver does. During a secret rotation the header carries one v1
// per secret; any one that matches is enough.
func verifyServiceSignature(secret, header string, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return errors.New("bad secret")
	}
	var ts string
	var sigs []string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("no timestamp")
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return errors.New("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) { // constant time
			return nil
		}
	}
	return errors.New("no valid signature")
}

// receive is a receiver's handler: verify, answer fast, then re-read the API.
func receive(secret string, seen func(deliveryID string) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := verifyServiceSignature(secret, r.Header.Get("X-Service-Signature"), body, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if seen(r.Header.Get("webhook-id")) { // a retry of a delivery already handled
			w.WriteHeader(http.StatusNoContent)
			return
		}
		var p struct {
			Type string `json:"type"`
			Data struct {
				Establishment string   `json:"establishment"`
				Revision      int64    `json:"content_revision"`
				Resources     []string `json:"resources"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		// Then, if p.Data.Revision is above the stored one, re-read each resource of
		// p.Data.Resources from /api/v1/establishments/<slug>[/hours|/menus|/menus/<type>].
	}
}

// Verifying X-Service-Signature with the standard library only. The Standard Webhooks headers
// (webhook-id, webhook-timestamp, webhook-signature) of the same delivery verify with any of
// that specification's libraries.
func Example_verifySignature() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	header := "t=1614265330,v1=e96203c6de850e7dc1fde7489ef6140b402d3a5a64fe250cd2eef9830fac1cef"
	sent := time.Unix(1614265330, 0)

	fmt.Println(verifyServiceSignature(secret, header, body, sent.Add(2*time.Second)))
	fmt.Println(verifyServiceSignature(secret, header, []byte(`{"test": 1}`), sent))
	fmt.Println(verifyServiceSignature(secret, header, body, sent.Add(time.Hour)))
	_ = receive(secret, func(string) bool { return false })
	// Output:
	// <nil>
	// no valid signature
	// timestamp outside tolerance
}
