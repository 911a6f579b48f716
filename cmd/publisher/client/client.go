package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// Client drives the admin API over HTTP.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the admin API at url. Without a token, it reads the one a local serve
// keeps in its data directory.
func New(url, token, dataDir string) (*Client, error) {
	if token == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
		if err != nil {
			return nil, fmt.Errorf("no admin token: give --admin-token (or %s), or the --data-dir of a local serve, which keeps its token there: %w", envflag.Name("admin-token"), err)
		}
		token = strings.TrimSpace(string(b))
	}
	return &Client{base: strings.TrimRight(url, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiFlags are the flags of every command that drives the admin API: where it is, and its token.
type apiFlags struct {
	url, token, dataDir string
}

// defaultURL is the admin API's base URL when neither --admin-url nor a local serve gives one.
const defaultURL = "http://127.0.0.1:8081"

func (f *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "admin-url", "", "base URL of the admin API (default: the one a serve on --data-dir records in <data-dir>/"+addrfile.Admin+" while it runs, else "+defaultURL+")")
	fs.StringVar(&f.token, "admin-token", "", "bearer token of the admin API (default: read from <data-dir>/admin-token)")
	fs.StringVar(&f.dataDir, "data-dir", "./data", "data directory of a local serve, to find its admin API and token")
}

// client is the client the flags describe; a missing token is a usage error of command.
func (f *apiFlags) client(command string) (*Client, error) {
	url, err := f.target()
	if err != nil {
		return nil, &envflag.UsageError{Command: command, Err: err}
	}
	c, err := New(url, f.token, f.dataDir)
	if err != nil {
		return nil, &envflag.UsageError{Command: command, Err: err}
	}
	return c, nil
}

// target returns the admin API's base URL: --admin-url, else the one a serve on the data
// directory recorded, else defaultURL.
func (f *apiFlags) target() (string, error) {
	if f.url != "" {
		return f.url, nil
	}
	recorded, err := addrfile.Read(f.dataDir, addrfile.Admin)
	return cmp.Or(recorded, defaultURL), err
}

// do sends a request with a body of contentType and returns the response body; a non-2xx status
// is an error carrying it.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": {contentType}}
	}
	resp, err := c.send(ctx, method, path, header, body)
	if err != nil {
		return nil, err
	}
	if resp.status/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s", method, path, resp.text())
	}
	return resp.body, nil
}

// response is an answer of the admin API, read whole.
type response struct {
	status     int
	statusText string // such as "503 Service Unavailable"
	header     http.Header
	body       []byte
}

// send sends one request and returns the answer whatever its status; only a failure to get an
// answer is an error.
func (c *Client) send(ctx context.Context, method, path string, header http.Header, body []byte) (*response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	// Without GetBody the transport never sends the request again on its own, as it otherwise
	// would for one with an Idempotency-Key on a reused connection that broke: such a replay
	// could apply the request, answer a duplicate and so hide an API key, unseen by the caller,
	// who retries itself and can say so.
	req.GetBody = nil
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, statusText: resp.Status, header: resp.Header, body: out}, nil
}

// text is the status and error of a failed request, from its {"error", "details"} body.
func (r *response) text() string {
	var body struct {
		Error   string   `json:"error"`
		Details []string `json:"details"`
	}
	if json.Unmarshal(r.body, &body) == nil && body.Error != "" {
		text := r.statusText
		if !strings.EqualFold(body.Error, http.StatusText(r.status)) {
			text += ": " + body.Error
		}
		if len(body.Details) > 0 {
			text += ": " + strings.Join(body.Details, "; ")
		}
		return text
	}
	text := strings.TrimSpace(string(r.body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		return r.statusText
	}
	return r.statusText + ": " + text
}
