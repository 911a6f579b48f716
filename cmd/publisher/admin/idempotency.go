package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// maxIdempotencyKey bounds the length of an Idempotency-Key.
const maxIdempotencyKey = 255

// commandIDKey is the request context key of the command id derived from an Idempotency-Key.
type commandIDKey struct{}

// commandID is the command id idempotency derived from the request's Idempotency-Key, or "" for
// a request without one (the command then gets a random id).
func commandID(r *http.Request) string {
	id, _ := r.Context().Value(commandIDKey{}).(string)
	return id
}

// idempotency turns the Idempotency-Key of a write into its command id: the key is scoped to
// the method and path it was sent with (so the same key on another establishment or another
// operation is another command), followed by a digest of the body (so the service can tell a
// retry from the key's reuse for a different request). A malformed key is a 400, never ignored.
func (a *API) idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if err := checkIdempotencyKey(keys); err != nil {
			a.fail(w, r, malformed(fmt.Errorf("Idempotency-Key: %w", err)))
			return
		}
		if isUpload(r) {
			// An upload is read file by file, and its key names the files it sends.
			scope := r.Method + "\x00" + r.URL.Path + "\x00" + keys[0]
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), uploadScopeKey{}, scope)))
			return
		}
		if r.URL.Path == importPath {
			// A batch is read line by line, and its key names each line's command.
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			a.fail(w, r, bodyError(fmt.Errorf("body: %w", err)))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		id := app.KeyedCommandID(r.Method+"\x00"+r.URL.Path+"\x00"+keys[0], body)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), commandIDKey{}, id)))
	})
}

// checkIdempotencyKey accepts one key of 1 to 255 visible ASCII characters.
func checkIdempotencyKey(keys []string) error {
	if len(keys) > 1 {
		return errors.New("sent more than once")
	}
	k := keys[0]
	if k == "" || len(k) > maxIdempotencyKey {
		return fmt.Errorf("want 1 to %d characters, got %d", maxIdempotencyKey, len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return errors.New("want visible ASCII characters only")
		}
	}
	return nil
}
