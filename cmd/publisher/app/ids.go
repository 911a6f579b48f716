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

// KeyedID returns the id of what a command creates: drawn at random (NewID), or, for a command
// under an idempotency key, made from the key and what it was sent to, the body left out, so that
// a retry finds what the first try made.
func KeyedID(prefix, commandID string) string {
	if scope, ok := keyScope(commandID); ok {
		return prefix + "_" + scope
	}
	return NewID(prefix)
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
