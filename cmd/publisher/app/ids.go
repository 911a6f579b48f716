package app

import (
	"crypto/rand"
	"crypto/sha256"
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

// SecretBytes is the randomness of a credential's secret (NewSecret): 256 bits.
const SecretBytes = 32

// SecretLen is the length of a secret of NewSecret, unpadded base64url.
var SecretLen = base64.RawURLEncoding.EncodedLen(SecretBytes)

// NewSecret draws the secret of a credential (a scoped token, a login link, a session) as
// unpadded base64url text of SecretBytes random bytes.
func NewSecret() string {
	var b [SecretBytes]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SecretDigest is what a store keeps of a secret: the hex SHA-256 of its text, never the text.
func SecretDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
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
