package admin

import (
	"crypto/rand"
	"encoding/base64"
)

// NewWebhookSecret draws a signing secret in the Standard Webhooks form: "whsec_" and the
// base64 of 32 random bytes.
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}
