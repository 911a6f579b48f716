package domain

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// ErrWeakAPIKey means a command was given a key that NewAPIKey did not make: a programming error
// of the caller, refused so that no guessable key is ever installed.
var ErrWeakAPIKey = errors.New("domain: api key is not 256 random bits")

// APIKey is a secret access key of the public API. It is shown once to the administrator; the
// aggregate and the log keep only its hash.
type APIKey string

// apiKeyPrefix makes keys recognisable in a leaked-secret scan.
const apiKeyPrefix = "pk_"

// NewAPIKey builds a key from 256 random bits, which the caller draws.
func NewAPIKey(random [32]byte) APIKey {
	return APIKey(apiKeyPrefix + base64.RawURLEncoding.EncodeToString(random[:]))
}

// Hash returns the hex SHA-256 of the key, the only form in which it is stored.
func (k APIKey) Hash() string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// check refuses a key that is not the form NewAPIKey makes.
func (k APIKey) check() error {
	if len(k) != len(apiKeyPrefix)+base64.RawURLEncoding.EncodedLen(32) || k[:len(apiKeyPrefix)] != apiKeyPrefix {
		return ErrWeakAPIKey
	}
	return nil
}
