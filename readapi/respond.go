package readapi

import (
	"net/http"
	"strconv"

	"github.com/opencarte/publisher/readapi/coding"
)

// Pre-built header values, shared by every response. net/http only reads them.
var (
	jsonContentType   = []string{"application/json"}
	jsonldContentType = []string{"application/ld+json"}
	privateNoCache    = []string{"private, no-cache"}
	noStore           = []string{"no-store"}
	allowGetHead      = []string{"GET, HEAD"}
	varyEncoding      = []string{"Accept-Encoding"}
	gzipEncoding      = []string{"gzip"}
)

// contentRevisionHeader is the canonical form of Content-Revision, the content_revision of the
// document served, so that a client can read it without parsing the body.
const contentRevisionHeader = "Content-Revision"

// failure is a kind of error answer.
type failure uint8

const (
	notFound failure = iota
	unauthorized
	methodNotAllowed
	rateLimited
	internalError
	notReady
	preconditionFailed
	unavailable
	tooManyConnections
)

// fixedAnswer is a status with a constant JSON body: the answer of a failure, or of a probe.
type fixedAnswer struct {
	status int
	body   []byte
	length []string
}

func newFixedAnswer(status int, body string) fixedAnswer {
	return fixedAnswer{status: status, body: []byte(body), length: []string{strconv.Itoa(len(body))}}
}

// errorAnswers maps each failure to its answer. The texts are those of the specification and are
// tested byte for byte.
var errorAnswers = [...]fixedAnswer{
	notFound:           newFixedAnswer(http.StatusNotFound, `{"error":"Not found"}`),
	unauthorized:       newFixedAnswer(http.StatusUnauthorized, `{"error":"Unauthorized"}`),
	methodNotAllowed:   newFixedAnswer(http.StatusMethodNotAllowed, `{"error":"Method not allowed"}`),
	rateLimited:        newFixedAnswer(http.StatusTooManyRequests, `{"error":"Rate limit exceeded"}`),
	internalError:      newFixedAnswer(http.StatusInternalServerError, `{"error":"Internal server error"}`),
	notReady:           newFixedAnswer(http.StatusServiceUnavailable, `{"error":"Not ready"}`),
	preconditionFailed: newFixedAnswer(http.StatusPreconditionFailed, `{"error":"Precondition failed"}`),
	unavailable:        newFixedAnswer(http.StatusServiceUnavailable, `{"error":"Service unavailable"}`),
	tooManyConnections: newFixedAnswer(http.StatusTooManyRequests, `{"error":"Too many connections"}`),
}

// writeError answers r with the failure f. Error answers are not to be stored by any cache: a 404
// turns into a 200 as soon as an establishment is activated, and a 429 lasts seconds.
func writeError(w http.ResponseWriter, r *http.Request, f failure) {
	writeAnswer(w, r, &errorAnswers[f])
}

// writeAnswer writes the constant answer a, not to be stored by caches.
func writeAnswer(w http.ResponseWriter, r *http.Request, a *fixedAnswer) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = a.length
	h["Cache-Control"] = noStore
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body) // a failed write means the client is gone
	}
}

// serveDocument answers r, an authorized request for e, with the stored document d: its bytes as
// they are, its ETag and revision, a 412 when If-Match names none of its tags (RFC 9110, section
// 13.1.1), and a 304 when If-None-Match matches. Neither counts against the key: a client that
// revalidates spends only its per-IP quota. Any other answer is counted and may be a 429.
//
// Cache-Control "private, no-cache" keeps the document out of shared caches (the request carried
// a key) and makes a private cache revalidate it on each use.
func (s *Server) serveDocument(w http.ResponseWriter, r *http.Request, e *served, a admission, d *document) {
	gz := d.gzip != nil && coding.AcceptsGzip(r)
	if ifMatch := r.Header[ifMatchHeader]; ifMatch != nil && !matchesIfMatch(ifMatch, d.etag, d.gzipETag) {
		s.chargeKey(w, r, e, a, chargeNothing)
		writeError(w, r, preconditionFailed)
		return
	}
	if notModified(r, d.etag) || d.gzip != nil && notModified(r, d.gzipETag) {
		s.chargeKey(w, r, e, a, chargeNotModified)
		setDocumentHeaders(w.Header(), e, d, gz)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if !s.chargeKey(w, r, e, a, chargeRequest) {
		return
	}
	h := w.Header()
	setDocumentHeaders(h, e, d, gz)
	h["Content-Type"] = d.contentType
	body := d.body
	if gz {
		h["Content-Encoding"] = gzipEncoding
		h["Content-Length"] = d.gzipLength
		body = d.gzip
	} else {
		h["Content-Length"] = d.length
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(body) // a failed write means the client is gone
}

// setDocumentHeaders sets the fields a 200 and a 304 of d share; gz selects the gzip coding,
// whose entity tag differs from the identity one as a strong validator must.
func setDocumentHeaders(h http.Header, e *served, d *document, gz bool) {
	if gz {
		h["Etag"] = d.gzipETagHeader
	} else {
		h["Etag"] = d.etagHeader
	}
	if d.gzip != nil {
		h["Vary"] = varyEncoding
	}
	h["Cache-Control"] = privateNoCache
	h[contentRevisionHeader] = e.revisionHeader
}

// redirectTo answers with a 302 to location, a pre-built Location value. The answer has no body.
func redirectTo(w http.ResponseWriter, location []string) {
	w.Header()["Location"] = location
	w.WriteHeader(http.StatusFound)
}
