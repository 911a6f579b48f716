package app

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"

	"github.com/opencarte/publisher/domain"
)

// NewID returns prefix, an underscore and 128 random bits in hex.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// newAPIKey draws a fresh API key.
func newAPIKey() domain.APIKey {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return domain.NewAPIKey(b)
}

// newWebhookSecret draws a signing secret in the Standard Webhooks form: "whsec_" and the
// base64 of 32 random bytes.
func newWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}
