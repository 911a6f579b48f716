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

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// subcommand is one command of admin: its arguments, what it does, and the request they make.
type subcommand struct {
	name string
	// args is the synopsis of its arguments, which their count is checked against: NAME is one
	// argument, [NAME] one that may be left out, NAME... one or more.
	args string
	// about says what it does; the usage indents its lines after the first.
	about string
	// request is the request the arguments make, the subcommand's name left out.
	request func(a []string) (request, error)
	// failed, when set, says whether an answer of success reports a failure of the operation
	// all the same, such as a test delivery the receiver refused.
	failed func(answer []byte) error
}

// request is one request to the admin API.
type request struct {
	method, path string
	body         []byte
	contentType  string // of body; JSON unless given
}

// adminCommands are the subcommands of admin, in the order the usage lists them.
func adminCommands() []subcommand {
	return []subcommand{
		{"list", "", "establishments in the log", call(http.MethodGet, "/admin/v1/establishments"), nil},
		{"get", "SLUG", "current content, webhooks, local date, version", onEstablishment(http.MethodGet, ""), nil},
		{"activate", "SLUG", "draft → active", onEstablishment(http.MethodPost, "/activate"), nil},
		{"enable-api", "SLUG", "turn the public API on; prints the key once", onEstablishment(http.MethodPost, "/api/enable"), nil},
		{"disable-api", "SLUG", "turn the public API off", onEstablishment(http.MethodPost, "/api/disable"), nil},
		{"regenerate-key", "SLUG", "prints the new key once; the old one stops working", onEstablishment(http.MethodPost, "/api/regenerate-key"), nil},
		{"set-redirect", "SLUG on|off", "menu_redirect_enabled", setRedirect, nil},
		{"publish-version", "SLUG TYPE FILE", "publish a menu version (JSON file, id from the file)", publishVersion, nil},
		{"withdraw-version", "SLUG TYPE VERSION", "withdraw a menu version", withdrawVersion, nil},
		{"upload", "FILE", "store a menu file (PNG, JPEG, WebP or PDF, at most 10 MB);\nprints its digest and URL, to use in imported documents", upload, nil},
		{"set-master-menu", "SLUG FILE|URL|none", "the unified card: a file to upload, a URL or digest, or none", setMasterMenu, nil},
		{"add-asset", "SLUG TYPE VERSION SCOPE FILE...", "upload files as the pages, in order, of one new file of a\nmenu version; SCOPE is fr, en or fr_en", addAsset, nil},
		{"collect-files", "", "remove stored files nothing refers to, past their grace\nperiod; fails when the collection stopped before the end", call(http.MethodPost, "/admin/v1/files/collect"), collectionStopped},
		{"add-webhook", "SLUG URL", "prints the signing secret once", addWebhook, nil},
		{"remove-webhook", "SLUG ID", "remove a webhook endpoint", onWebhook(http.MethodDelete, ""), nil},
		{"webhooks", "SLUG", "endpoints with their delivery state (never a secret)", onEstablishment(http.MethodGet, "/webhooks"), nil},
		{"deliveries", "SLUG ID", "delivery log of an endpoint: attempts, status, latency, error", onWebhook(http.MethodGet, "/deliveries"), nil},
		{"ping", "SLUG ID", "send a test delivery now; fails if the receiver refuses it", onWebhook(http.MethodPost, "/ping"), pingRefused},
		{"redeliver", "DELIVERY", "send a delivery again (queued: deliveries shows the outcome)", redeliver, nil},
		{"rotate-secret", "SLUG ID [GRACE]", "new signing secret, printed once; the old one signs for\nGRACE (24h)", rotateSecret, nil},
		{"enable-webhook", "SLUG ID", "re-enable an endpoint disabled by a 410 Gone", onWebhook(http.MethodPost, "/enable"), nil},
		{"add-platform-webhook", "URL [SLUG...]", "a receiver of every establishment's changes in batches, or\nof the SLUGs'; prints the signing secret once", addPlatformWebhook, nil},
		{"platform-webhooks", "", "platform endpoints with their delivery state", call(http.MethodGet, "/admin/v1/webhooks"), nil},
		{"remove-platform-webhook", "ID", "remove a platform endpoint", onPlatform(http.MethodDelete, ""), nil},
		{"platform-deliveries", "ID", "delivery log of a platform endpoint", onPlatform(http.MethodGet, "/deliveries"), nil},
		{"ping-platform-webhook", "ID", "send a platform endpoint a test delivery now", onPlatform(http.MethodPost, "/ping"), pingRefused},
		{"rotate-platform-secret", "ID [GRACE]", "new signing secret of a platform endpoint, printed once", rotatePlatformSecret, nil},
		{"enable-platform-webhook", "ID", "re-enable a platform endpoint; delivers what it missed", onPlatform(http.MethodPost, "/enable"), nil},
		{"add-destination", "FILE", "a broker (kafka, amqp, nats or postgres) that receives every\nchange as a CloudEvent; FILE holds its registration (JSON)", addDestination, nil},
		{"destinations", "", "broker destinations with their state and lag (never a credential)", call(http.MethodGet, "/admin/v1/destinations"), nil},
		{"destination", "ID", "one destination: state, published, failures, last error, lag", onDestination(http.MethodGet, ""), nil},
		{"pause-destination", "ID", "stop publishing to a destination; it keeps its position", onDestination(http.MethodPost, "/pause"), nil},
		{"resume-destination", "ID", "publish again, from where it stopped", onDestination(http.MethodPost, "/resume"), nil},
		{"remove-destination", "ID", "remove a destination and its credentials", onDestination(http.MethodDelete, ""), nil},
		{"create-token", "NAME SCOPE EXPIRES_IN [SLUG...]", "a scoped admin token (SCOPE platform, read, or establishment\nof the SLUGs), valid EXPIRES_IN (720h); prints it once", createToken, nil},
		{"tokens", "", "scoped tokens with their scopes and expiries (never a secret)", call(http.MethodGet, "/admin/v1/tokens"), nil},
		{"revoke-token", "ID", "refuse a scoped token from now on", revokeToken, nil},
		{"audit", "SLUG [BEFORE]", "who did what to an establishment, newest first; BEFORE is\nthe next of the previous page", audit, nil},
		{"login-link", "SLUG [NAME]", "a one-time link to the establishment's API settings page,\nfor NAME; valid a few minutes", loginLink, nil},
		{"status", "", "the process's roles, log positions, storage and webhooks", call(http.MethodGet, "/admin/v1/status"), nil},
	}
}

// check says what is wrong with the count of arguments a, if anything, as a usage error.
func (s subcommand) check(a []string) error {
	least, most := arity(s.args)
	n := len(a)
	if n >= least && (most < 0 || n <= most) {
		return nil
	}
	var want string
	switch {
	case most == 0:
		return envflag.Usagef("admin "+s.name, "takes no arguments, got %q", a)
	case most < 0:
		want = "at least " + count(least, "argument")
	case least == most:
		want = count(least, "argument")
	case most == least+1:
		want = fmt.Sprintf("%d or %s", least, count(most, "argument"))
	default:
		want = fmt.Sprintf("%d to %s", least, count(most, "argument"))
	}
	return envflag.Usagef("admin "+s.name, "want %s (%s), got %d", want, s.args, n)
}

// arity is the least and the most arguments a synopsis takes; most is -1 for no limit.
func arity(synopsis string) (least, most int) {
	unlimited := false
	for _, w := range strings.Fields(synopsis) {
		switch {
		case strings.HasPrefix(w, "[") && strings.HasSuffix(w, "...]"):
			unlimited = true
		case strings.HasPrefix(w, "["):
			most++
		case strings.HasSuffix(w, "..."):
			least++
			unlimited = true
		default:
			least++
			most++
		}
	}
	if unlimited {
		return least, -1
	}
	return least, most
}

// count is n of a thing, in the singular or the plural.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// Arguments go into the path escaped, so each stays one path segment whatever it holds.

func establishmentPath(slug string) string { return "/admin/v1/establishments/" + url.PathEscape(slug) }

func webhookPath(slug, id string) string {
	return establishmentPath(slug) + "/webhooks/" + url.PathEscape(id)
}

func versionPath(slug, menuType, id string) string {
	return establishmentPath(slug) + "/menu-types/" + url.PathEscape(menuType) + "/versions/" + url.PathEscape(id)
}

// call is the request of a subcommand without arguments.
func call(method, path string) func([]string) (request, error) {
	return func([]string) (request, error) { return request{method: method, path: path}, nil }
}

// onEstablishment is the request of a subcommand of SLUG, at suffix under the establishment.
func onEstablishment(method, suffix string) func([]string) (request, error) {
	return func(a []string) (request, error) {
		return request{method: method, path: establishmentPath(a[0]) + suffix}, nil
	}
}

// onWebhook is the request of a subcommand of SLUG ID, at suffix under the webhook endpoint.
func onWebhook(method, suffix string) func([]string) (request, error) {
	return func(a []string) (request, error) {
		return request{method: method, path: webhookPath(a[0], a[1]) + suffix}, nil
	}
}

// onPlatform is the request of a subcommand of ID, at suffix under the platform endpoint.
func onPlatform(method, suffix string) func([]string) (request, error) {
	return func(a []string) (request, error) {
		return request{method: method, path: "/admin/v1/webhooks/" + url.PathEscape(a[0]) + suffix}, nil
	}
}

func onDestination(method, suffix string) func([]string) (request, error) {
	return func(a []string) (request, error) {
		return request{method: method, path: "/admin/v1/destinations/" + url.PathEscape(a[0]) + suffix}, nil
	}
}

// addDestination sends the registration in the file a[0]: a file rather than arguments, so that
// its credentials are not on the command line.
func addDestination(a []string) (request, error) {
	body, err := os.ReadFile(a[0])
	if err != nil {
		return request{}, err
	}
	return request{method: http.MethodPost, path: "/admin/v1/destinations", body: body}, nil
}

func addPlatformWebhook(a []string) (request, error) {
	in := map[string]any{"url": a[0]}
	if len(a) > 1 {
		in["establishments"] = a[1:]
	}
	body, _ := json.Marshal(in)
	return request{method: http.MethodPost, path: "/admin/v1/webhooks", body: body}, nil
}

func rotatePlatformSecret(a []string) (request, error) {
	r := request{method: http.MethodPost, path: "/admin/v1/webhooks/" + url.PathEscape(a[0]) + "/rotate-secret"}
	if len(a) == 2 {
		r.body, _ = json.Marshal(map[string]string{"grace": a[1]})
	}
	return r, nil
}

func createToken(a []string) (request, error) {
	in := map[string]any{"name": a[0], "scope": a[1], "expires_in": a[2]}
	if len(a) > 3 {
		in["establishments"] = a[3:]
	}
	body, _ := json.Marshal(in)
	return request{method: http.MethodPost, path: "/admin/v1/tokens", body: body}, nil
}

func revokeToken(a []string) (request, error) {
	return request{method: http.MethodDelete, path: "/admin/v1/tokens/" + url.PathEscape(a[0])}, nil
}

func audit(a []string) (request, error) {
	path := establishmentPath(a[0]) + "/audit"
	if len(a) == 2 {
		path += "?before=" + url.QueryEscape(a[1])
	}
	return request{method: http.MethodGet, path: path}, nil
}

func loginLink(a []string) (request, error) {
	r := request{method: http.MethodPost, path: establishmentPath(a[0]) + "/login-links"}
	if len(a) == 2 {
		r.body, _ = json.Marshal(map[string]string{"name": a[1]})
	}
	return r, nil
}

func redeliver(a []string) (request, error) {
	return request{method: http.MethodPost, path: "/admin/v1/deliveries/" + url.PathEscape(a[0]) + "/redeliver"}, nil
}

func setRedirect(a []string) (request, error) {
	if a[1] != "on" && a[1] != "off" {
		return request{}, envflag.Usagef("admin set-redirect", "want on or off, got %q", a[1])
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
