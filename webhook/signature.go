package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret: "whsec_" followed by the standard base64 encoding of
// the key, as in the Standard Webhooks specification.
const SecretPrefix = "whsec_"

// Bounds of a signing key, in bytes.
const (
	minKeyLen = 24
	maxKeyLen = 64
)

// Signature headers.
const (
	// HeaderServiceSignature carries "t=<unix seconds>,v1=<hex>", one v1 per signing secret, where
	// each hex value is HMAC-SHA256(key, "<t>.<body>").
	HeaderServiceSignature = "X-Service-Signature"
	// HeaderWebhookID, HeaderWebhookTimestamp and HeaderWebhookSignature are the Standard Webhooks
	// headers: the delivery id, the attempt's unix time, and "v1,<base64>" per signing secret,
	// separated by spaces, each over "<id>.<timestamp>.<body>".
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// parseSecret returns the key of a "whsec_<base64>" secret.
func parseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: want the %q prefix", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: not standard base64", ErrInvalidSecret)
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: key of %d bytes, want %d to %d", ErrInvalidSecret, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// serviceSignature returns the X-Service-Signature value for body sent at unix time ts, with one
// v1 entry per key, in the order given.
func serviceSignature(keys [][]byte, ts int64, body []byte) string {
	t := strconv.FormatInt(ts, 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(t)
	for _, k := range keys {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(k, []byte(t), []byte{'.'}, body)))
	}
	return b.String()
}

// standardSignature returns the Standard Webhooks webhook-signature value for message id sent at
// unix time ts, with one "v1,<base64>" entry per key, separated by spaces.
func standardSignature(keys [][]byte, id string, ts int64, body []byte) string {
	t := strconv.FormatInt(ts, 10)
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(k, []byte(id), []byte{'.'}, []byte(t), []byte{'.'}, body))
	}
	return strings.Join(sigs, " ")
}
