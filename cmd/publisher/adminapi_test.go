package main

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"

	"github.com/felixge/httpsnoop"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	adminopenapi "github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// adminDescription is the admin API's description as the checks load it, once.
var adminDescription = sync.OnceValues(func() (*openapitest.Description, error) {
	return openapitest.New(adminopenapi.YAML(), openapitest.Options{
		UnknownPath: map[int]string{
			http.StatusUnauthorized:    "Unauthorized",
			http.StatusNotFound:        "NotFound",
			http.StatusTooManyRequests: "TooManyRequests",
		},
		OtherMethod: map[int]string{
			http.StatusUnauthorized:     "Unauthorized",
			http.StatusMethodNotAllowed: "MethodNotAllowed",
			http.StatusTooManyRequests:  "TooManyRequests",
		},
	})
})

// adminChecker checks every answer of an admin API against its description, and every request it
// accepted: what a test sends through the CLI, the client package or plain HTTP alike.
type adminChecker struct {
	d        *openapitest.Description
	mu       sync.Mutex
	problems []string
	answered map[string]int // answers checked, by operation id ("" for no operation)
}

// checkAdmin makes m's admin API checked against its description, the problems reported when
// the test ends, after m is closed (when m is started after this call, as startMain does).
func checkAdmin(tb testing.TB, m *Main) *adminChecker {
	tb.Helper()
	d, err := adminDescription()
	if err != nil {
		tb.Fatal(err)
	}
	c := &adminChecker{d: d, answered: map[string]int{}}
	m.wrapAdmin = c.wrap
	tb.Cleanup(func() {
		for _, p := range c.report() {
			tb.Errorf("admin API: %s", p)
		}
	})
	return c
}

// maxCheckedRequest bounds the request body a check keeps: a JSON body is at most this long.
const maxCheckedRequest = admin.MaxBodyBytes

// wrap returns next, checking each of its answers, and the request of each answer below 300.
func (c *adminChecker) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sent bytes.Buffer
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, &limited{&sent, maxCheckedRequest}), r.Body}
		}
		var (
			status int
			body   bytes.Buffer
		)
		w = httpsnoop.Wrap(w, httpsnoop.Hooks{
			WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
				return func(code int) {
					if status == 0 {
						status = code
					}
					next(code)
				}
			},
			Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
				return func(b []byte) (int, error) {
					if status == 0 {
						status = http.StatusOK
					}
					body.Write(b)
					return next(b)
				}
			},
		})
		next.ServeHTTP(w, r)
		if status == 0 {
			return // the client went away: nobody reads an answer
		}
		c.check(r, status, w.Header(), body.Bytes(), sent.Bytes())
	})
}

// check checks one exchange and notes what departs from the description.
func (c *adminChecker) check(r *http.Request, status int, header http.Header, body, sent []byte) {
	var problems []string
	op, err := c.d.Operation(r.Context(), r)
	id := ""
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		id = op.OperationID
	}
	if err := c.d.ValidateResponse(r.Context(), r, status, header, body); err != nil {
		problems = append(problems, fmt.Sprintf("answer %d departs from the description:\n%v\nbody: %.2000s", status, err, body))
	}
	if status < 300 && id != "" {
		if err := c.d.ValidateRequest(r.Context(), r, sent); err != nil {
			problems = append(problems, fmt.Sprintf("request accepted (%d) departs from the description:\n%v\nbody: %.2000s", status, err, sent))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered[id]++
	for _, p := range problems {
		c.problems = append(c.problems, r.Method+" "+r.URL.RequestURI()+": "+p)
	}
}

// report returns the problems noted so far.
func (c *adminChecker) report() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

// operations returns how many answers were checked, by operation id.
func (c *adminChecker) operations() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.answered))
	for k, v := range c.answered {
		out[k] = v
	}
	return out
}

// limited writes to w at most n bytes in all, dropping the rest.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
