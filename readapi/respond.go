package readapi

import (
	"net/http"
	"strconv"
)

// Pre-built header values, shared by every response. net/http only reads them.
var (
	jsonContentType = []string{"application/json"}
	noCache         = []string{"no-cache"}
	allowGetHead    = []string{"GET, HEAD"}
)

// failure is a kind of error answer.
type failure uint8

const (
	notFound failure = iota
	unauthorized
	methodNotAllowed
	rateLimited
	internalError
)

// errorAnswer is the status and constant body of a failure.
type errorAnswer struct {
	status int
	body   []byte
	length []string
}

func newErrorAnswer(status int, body string) errorAnswer {
	return errorAnswer{status: status, body: []byte(body), length: []string{strconv.Itoa(len(body))}}
}

// errorAnswers maps each failure to its answer. The texts are those of the specification and are
// tested byte for byte.
var errorAnswers = [...]errorAnswer{
	notFound:         newErrorAnswer(http.StatusNotFound, `{"error":"Not found"}`),
	unauthorized:     newErrorAnswer(http.StatusUnauthorized, `{"error":"Unauthorized"}`),
	methodNotAllowed: newErrorAnswer(http.StatusMethodNotAllowed, `{"error":"Method not allowed"}`),
	rateLimited:      newErrorAnswer(http.StatusTooManyRequests, `{"error":"Rate limit exceeded"}`),
	internalError:    newErrorAnswer(http.StatusInternalServerError, `{"error":"Internal server error"}`),
}

// writeError answers r with the failure f. Error answers are not to be stored by caches: a 404
// turns into a 200 as soon as an establishment is activated.
func writeError(w http.ResponseWriter, r *http.Request, f failure) {
	a := &errorAnswers[f]
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = a.length
	h["Cache-Control"] = noCache
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body) // a failed write means the client is gone
	}
}

// serveDocument answers r with the stored document d: its bytes as they are, its ETag, and a 304
// when If-None-Match matches. Cache-Control no-cache lets any cache keep the body but makes it
// revalidate each use, so a request without a valid key never gets it from a shared cache.
func serveDocument(w http.ResponseWriter, r *http.Request, d *document) {
	h := w.Header()
	h["Etag"] = d.etagHeader
	h["Cache-Control"] = noCache
	if notModified(r, d.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = d.length
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(d.body) // a failed write means the client is gone
}

// redirectTo answers with a 302 to location, a pre-built Location value. The answer has no body.
func redirectTo(w http.ResponseWriter, location []string) {
	w.Header()["Location"] = location
	w.WriteHeader(http.StatusFound)
}
