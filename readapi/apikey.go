package readapi

import (
	"crypto/sha256"
	"net/http"
)

// apiKeyHeader is the canonical form of the X-Api-Key header, so that it can index
// http.Header directly.
const apiKeyHeader = "X-Api-Key"

// maxStackKey bounds the keys hashed from a stack buffer; a longer key is still checked, only
// with an allocation.
const maxStackKey = 256

// apiKey returns the API key of r and whether one was sent. An empty header counts as absent; of
// repeated headers the first one is used, as http.Header.Get does.
func apiKey(r *http.Request) (string, bool) {
	v := r.Header[apiKeyHeader]
	if len(v) == 0 || v[0] == "" {
		return "", false
	}
	return v[0], true
}

// hashKey returns the SHA-256 of key without allocating for keys of a sane length.
func hashKey(key string) [sha256.Size]byte {
	if len(key) <= maxStackKey {
		var buf [maxStackKey]byte
		return sha256.Sum256(append(buf[:0], key...))
	}
	return sha256.Sum256([]byte(key))
}
