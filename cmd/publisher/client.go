package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// client drives the admin API over HTTP.
type client struct {
	base  string
	token string
	http  *http.Client
}

func clientFlags(fs *flag.FlagSet) (*string, *string, *string) {
	url := fs.String("admin-url", "http://127.0.0.1:8081", "base URL of the admin API")
	token := fs.String("admin-token", "", "bearer token of the admin API (default: read from <data-dir>/admin-token)")
	dataDir := fs.String("data-dir", "./data", "data directory of a local serve, to find its admin token")
	return url, token, dataDir
}

func newClient(url, token, dataDir string) (*client, error) {
	if token == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
		if err != nil {
			return nil, fmt.Errorf("no --admin-token given and none found in %s: %w", dataDir, err)
		}
		token = strings.TrimSpace(string(b))
	}
	return &client{base: strings.TrimRight(url, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// doAs sends a request with a body of contentType and returns the response body; a non-2xx
// status is an error carrying it.
func (c *client) doAs(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": {contentType}}
	}
	resp, err := c.send(ctx, method, path, header, body)
	if err != nil {
		return nil, err
	}
	if resp.status/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.statusText, strings.TrimSpace(string(resp.body)))
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
func (c *client) send(ctx context.Context, method, path string, header http.Header, body []byte) (*response, error) {
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

const adminUsage = `usage: publisher admin [flags] <command> [args]

  list                                  establishments in the log
  get SLUG                              current content, webhooks, local date, version
  activate SLUG                         draft → active
  enable-api SLUG                       turn the public API on; prints the key once
  disable-api SLUG
  regenerate-key SLUG                   prints the new key once; the old one stops working
  set-redirect SLUG on|off              menu_redirect_enabled
  publish-version SLUG TYPE FILE        publish a menu version (JSON file, id from the file)
  withdraw-version SLUG TYPE VERSION
  upload FILE                           store a menu file (PNG, JPEG, WebP or PDF, at most 10 MB);
                                        prints its digest and URL, to use in imported documents
  set-master-menu SLUG FILE|URL|none    the unified card: a file to upload, a URL or digest, or none
  add-asset SLUG TYPE VERSION SCOPE FILE...
                                        upload files as the pages, in order, of one new file of a
                                        menu version; SCOPE is fr, en or fr_en
  collect-files                         remove stored files nothing refers to, past their grace period
  add-webhook SLUG URL                  prints the signing secret once
  remove-webhook SLUG ID
  webhooks SLUG                         endpoints with their delivery state (never a secret)
  deliveries SLUG ID                    delivery log of an endpoint: attempts, status, latency, error
  ping SLUG ID                          send a test delivery now
  redeliver DELIVERY                    send a delivery again
  rotate-secret SLUG ID [GRACE]         new signing secret, printed once; the old one signs for GRACE (24h)
  enable-webhook SLUG ID                re-enable an endpoint disabled by a 410 Gone
  status
`

func adminCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url, token, dataDir := clientFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, adminUsage)
		envflag.Usage(fs, "publisher admin [flags] <command> [args]")()
	}
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) == 0 {
		fs.Usage()
		return fmt.Errorf("admin: no command given")
	}
	want := func(n int) error {
		if len(a)-1 != n {
			fs.Usage()
			return fmt.Errorf("admin %s: want %d arguments, got %d", a[0], n, len(a)-1)
		}
		return nil
	}
	c, err := newClient(*url, *token, *dataDir)
	if err != nil {
		return err
	}
	// Arguments go into the path escaped, so each stays one path segment whatever it holds.
	seg := neturl.PathEscape
	est := func(slug string) string { return "/admin/v1/establishments/" + seg(slug) }
	var method, path string
	var body []byte
	contentType := "application/json"
	switch a[0] {
	case "list":
		err, method, path = want(0), http.MethodGet, "/admin/v1/establishments"
	case "status":
		err, method, path = want(0), http.MethodGet, "/admin/v1/status"
	case "get":
		if err = want(1); err == nil {
			method, path = http.MethodGet, est(a[1])
		}
	case "activate", "enable-api", "disable-api", "regenerate-key":
		if err = want(1); err == nil {
			action := map[string]string{"activate": "/activate", "enable-api": "/api/enable", "disable-api": "/api/disable", "regenerate-key": "/api/regenerate-key"}[a[0]]
			method, path = http.MethodPost, est(a[1])+action
		}
	case "set-redirect":
		if err = want(2); err == nil {
			if a[2] != "on" && a[2] != "off" {
				return fmt.Errorf("admin set-redirect: want on or off, got %q", a[2])
			}
			method, path, body = http.MethodPut, est(a[1])+"/menu-redirect", []byte(fmt.Sprintf(`{"enabled":%t}`, a[2] == "on"))
		}
	case "publish-version":
		if err = want(3); err == nil {
			if body, err = os.ReadFile(a[3]); err != nil {
				return err
			}
			var head struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(body, &head); err != nil || head.ID == "" {
				return fmt.Errorf("%s: want a JSON menu version with an id", a[3])
			}
			method, path = http.MethodPut, est(a[1])+"/menu-types/"+seg(a[2])+"/versions/"+seg(head.ID)
		}
	case "withdraw-version":
		if err = want(3); err == nil {
			method, path = http.MethodDelete, est(a[1])+"/menu-types/"+seg(a[2])+"/versions/"+seg(a[3])
		}
	case "add-webhook":
		if err = want(2); err == nil {
			b, _ := json.Marshal(map[string]string{"url": a[2]})
			method, path, body = http.MethodPost, est(a[1])+"/webhooks", b
		}
	case "remove-webhook":
		if err = want(2); err == nil {
			method, path = http.MethodDelete, est(a[1])+"/webhooks/"+seg(a[2])
		}
	case "webhooks":
		if err = want(1); err == nil {
			method, path = http.MethodGet, est(a[1])+"/webhooks"
		}
	case "deliveries", "ping", "enable-webhook":
		if err = want(2); err == nil {
			method, path = http.MethodPost, est(a[1])+"/webhooks/"+seg(a[2])+map[string]string{"deliveries": "/deliveries", "ping": "/ping", "enable-webhook": "/enable"}[a[0]]
			if a[0] == "deliveries" {
				method = http.MethodGet
			}
		}
	case "redeliver":
		if err = want(1); err == nil {
			method, path = http.MethodPost, "/admin/v1/deliveries/"+seg(a[1])+"/redeliver"
		}
	case "rotate-secret":
		if len(a) == 4 {
			b, _ := json.Marshal(map[string]string{"grace": a[3]})
			method, path, body = http.MethodPost, est(a[1])+"/webhooks/"+seg(a[2])+"/rotate-secret", b
		} else if err = want(2); err == nil {
			method, path = http.MethodPost, est(a[1])+"/webhooks/"+seg(a[2])+"/rotate-secret"
		}
	case "upload":
		if err = want(1); err == nil {
			method, path, contentType = http.MethodPost, "/admin/v1/files", "application/octet-stream"
			body, err = os.ReadFile(a[1])
		}
	case "set-master-menu":
		if err = want(2); err == nil {
			method, path = http.MethodPut, est(a[1])+"/master-menu"
			switch ref := a[2]; {
			case ref == "none":
				method = http.MethodDelete
			case strings.HasPrefix(ref, "https://"), strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "sha256:"):
				body, _ = json.Marshal(map[string]string{"url": ref})
			default:
				contentType = "application/octet-stream"
				body, err = os.ReadFile(ref)
			}
		}
	case "add-asset":
		if len(a) < 6 {
			fs.Usage()
			return fmt.Errorf("admin add-asset: want SLUG TYPE VERSION SCOPE and at least one file")
		}
		method = http.MethodPost
		path = est(a[1]) + "/menu-types/" + seg(a[2]) + "/versions/" + seg(a[3]) + "/assets?language_scope=" + neturl.QueryEscape(a[4])
		body, contentType, err = multipartFiles(a[5:])
	case "collect-files":
		err, method, path = want(0), http.MethodPost, "/admin/v1/files/collect"
	default:
		fs.Usage()
		return fmt.Errorf("admin: unknown command %q", a[0])
	}
	if err != nil {
		return err
	}
	if contentType != "application/json" {
		c.http.Timeout = uploadTimeout // files of 10 MB on a slow link
	}
	out, err := c.doAs(ctx, method, path, contentType, body)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// uploadTimeout bounds a request sending files, as the admin API bounds its reading.
const uploadTimeout = 10 * time.Minute

// multipartFiles returns a multipart/form-data body with each file as a part named "file", in
// order, and its content type.
func multipartFiles(names []string) ([]byte, string, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, "", err
		}
		part, err := w.CreateFormFile("file", filepath.Base(name))
		if err != nil {
			return nil, "", err
		}
		if _, err := part.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), w.FormDataContentType(), nil
}
