package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// subcommand is one command of admin: the count of arguments it takes, and the request they make.
type subcommand struct {
	// args says what is wrong with a count of arguments, if anything: the usage is printed
	// before the error.
	args func(name string, n int) error
	// request is the request the arguments make, the subcommand's name left out.
	request func(a []string) (request, error)
}

// request is one request to the admin API.
type request struct {
	method, path string
	body         []byte
	contentType  string // of body; JSON unless given
}

var subcommands = map[string]subcommand{
	"list":             call(http.MethodGet, "/admin/v1/establishments"),
	"status":           call(http.MethodGet, "/admin/v1/status"),
	"collect-files":    call(http.MethodPost, "/admin/v1/files/collect"),
	"get":              onEstablishment(http.MethodGet, ""),
	"activate":         onEstablishment(http.MethodPost, "/activate"),
	"enable-api":       onEstablishment(http.MethodPost, "/api/enable"),
	"disable-api":      onEstablishment(http.MethodPost, "/api/disable"),
	"regenerate-key":   onEstablishment(http.MethodPost, "/api/regenerate-key"),
	"webhooks":         onEstablishment(http.MethodGet, "/webhooks"),
	"remove-webhook":   onWebhook(http.MethodDelete, ""),
	"deliveries":       onWebhook(http.MethodGet, "/deliveries"),
	"ping":             onWebhook(http.MethodPost, "/ping"),
	"enable-webhook":   onWebhook(http.MethodPost, "/enable"),
	"redeliver":        {exactly(1), redeliver},
	"set-redirect":     {exactly(2), setRedirect},
	"publish-version":  {exactly(3), publishVersion},
	"withdraw-version": {exactly(3), withdrawVersion},
	"add-webhook":      {exactly(2), addWebhook},
	"rotate-secret":    {graceOptional, rotateSecret},
	"upload":           {exactly(1), upload},
	"set-master-menu":  {exactly(2), setMasterMenu},
	"add-asset":        {filesAfterScope, addAsset},
}

// exactly is the check of a subcommand taking want arguments.
func exactly(want int) func(name string, n int) error {
	return func(name string, n int) error {
		if n != want {
			return fmt.Errorf("admin %s: want %d arguments, got %d", name, want, n)
		}
		return nil
	}
}

// graceOptional is the check of rotate-secret: SLUG ID, and a GRACE if given.
func graceOptional(name string, n int) error {
	if n == 3 {
		return nil
	}
	return exactly(2)(name, n)
}

// filesAfterScope is the check of add-asset: SLUG TYPE VERSION SCOPE, then files.
func filesAfterScope(_ string, n int) error {
	if n < 5 {
		return fmt.Errorf("admin add-asset: want SLUG TYPE VERSION SCOPE and at least one file")
	}
	return nil
}

// Arguments go into the path escaped, so each stays one path segment whatever it holds.

func establishmentPath(slug string) string { return "/admin/v1/establishments/" + url.PathEscape(slug) }

func webhookPath(slug, id string) string {
	return establishmentPath(slug) + "/webhooks/" + url.PathEscape(id)
}

func versionPath(slug, menuType, id string) string {
	return establishmentPath(slug) + "/menu-types/" + url.PathEscape(menuType) + "/versions/" + url.PathEscape(id)
}

// call is a subcommand without arguments.
func call(method, path string) subcommand {
	return subcommand{exactly(0), func([]string) (request, error) { return request{method: method, path: path}, nil }}
}

// onEstablishment is a subcommand of SLUG, at suffix under the establishment.
func onEstablishment(method, suffix string) subcommand {
	return subcommand{exactly(1), func(a []string) (request, error) {
		return request{method: method, path: establishmentPath(a[0]) + suffix}, nil
	}}
}

// onWebhook is a subcommand of SLUG ID, at suffix under the webhook endpoint.
func onWebhook(method, suffix string) subcommand {
	return subcommand{exactly(2), func(a []string) (request, error) {
		return request{method: method, path: webhookPath(a[0], a[1]) + suffix}, nil
	}}
}

func redeliver(a []string) (request, error) {
	return request{method: http.MethodPost, path: "/admin/v1/deliveries/" + url.PathEscape(a[0]) + "/redeliver"}, nil
}

func setRedirect(a []string) (request, error) {
	if a[1] != "on" && a[1] != "off" {
		return request{}, fmt.Errorf("admin set-redirect: want on or off, got %q", a[1])
	}
	body := fmt.Appendf(nil, `{"enabled":%t}`, a[1] == "on")
	return request{method: http.MethodPut, path: establishmentPath(a[0]) + "/menu-redirect", body: body}, nil
}

// publishVersion sends a menu version's file under the id the file gives.
func publishVersion(a []string) (request, error) {
	body, err := os.ReadFile(a[2])
	if err != nil {
		return request{}, err
	}
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.ID == "" {
		return request{}, fmt.Errorf("%s: want a JSON menu version with an id", a[2])
	}
	return request{method: http.MethodPut, path: versionPath(a[0], a[1], head.ID), body: body}, nil
}

func withdrawVersion(a []string) (request, error) {
	return request{method: http.MethodDelete, path: versionPath(a[0], a[1], a[2])}, nil
}

func addWebhook(a []string) (request, error) {
	body, _ := json.Marshal(map[string]string{"url": a[1]})
	return request{method: http.MethodPost, path: establishmentPath(a[0]) + "/webhooks", body: body}, nil
}

func rotateSecret(a []string) (request, error) {
	r := request{method: http.MethodPost, path: webhookPath(a[0], a[1]) + "/rotate-secret"}
	if len(a) == 3 {
		r.body, _ = json.Marshal(map[string]string{"grace": a[2]})
	}
	return r, nil
}

func upload(a []string) (request, error) {
	body, err := os.ReadFile(a[0])
	return request{method: http.MethodPost, path: "/admin/v1/files", body: body, contentType: "application/octet-stream"}, err
}

// setMasterMenu sets the unified card from a file to upload, a URL or digest, or removes it.
func setMasterMenu(a []string) (request, error) {
	r := request{method: http.MethodPut, path: establishmentPath(a[0]) + "/master-menu"}
	var err error
	switch ref := a[1]; {
	case ref == "none":
		r.method = http.MethodDelete
	case strings.HasPrefix(ref, "https://"), strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "sha256:"):
		r.body, _ = json.Marshal(map[string]string{"url": ref})
	default:
		r.contentType = "application/octet-stream"
		r.body, err = os.ReadFile(ref)
	}
	return r, err
}

// addAsset uploads files as the pages of one new file of a menu version.
func addAsset(a []string) (request, error) {
	body, contentType, err := multipartFiles(a[4:])
	path := versionPath(a[0], a[1], a[2]) + "/assets?language_scope=" + url.QueryEscape(a[3])
	return request{method: http.MethodPost, path: path, body: body, contentType: contentType}, err
}

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
