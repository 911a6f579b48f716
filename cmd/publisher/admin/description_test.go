package admin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/tokens"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// TestEveryRouteIsDescribed compares the surface of a fully configured API with the operations
// of its description: a route added, removed or moved on either side fails.
func TestEveryRouteIsDescribed(t *testing.T) {
	t.Parallel()
	d, err := openapitest.New(openapi.YAML(), openapitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, item := range d.Doc().Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	var routed []string
	for _, rt := range fullSurface() {
		routed = append(routed, rt.method+" "+describedPath(rt.path))
	}
	slices.Sort(described)
	slices.Sort(routed)
	if diff := cmp.Diff(described, routed); diff != "" {
		t.Errorf("operations (-described +routed):\n%s", diff)
	}
}

// fullSurface is the surface of an API with every optional part configured.
func fullSurface() []route {
	a := &API{cfg: Config{
		Deliveries: &app.Deliveries{}, Platform: &app.Platform{}, Debug: http.NotFoundHandler(),
		Changes:      func(context.Context, string, int, time.Duration) (any, error) { return nil, nil },
		Destinations: struct{ Destinations }{}, Tokens: &tokens.Store{},
		LoginLinks: func(context.Context, domain.Slug, string) (string, time.Time, error) { return "", time.Time{}, nil },
	}}
	return a.surface()
}

var routeParam = regexp.MustCompile(`[:*]([a-z_]+)`)

// describedPath is a route's path as the description writes it.
func describedPath(path string) string {
	path = routeParam.ReplaceAllString(path, "{$1}")
	// The profiles are described by name, which the router takes as the rest of the path.
	return strings.Replace(path, "/admin/debug/{path}", "/admin/debug/pprof/{profile}", 1)
}

// TestScopesAreDescribed wants the x-scopes of each operation of the description to be the
// scopes its route serves.
func TestScopesAreDescribed(t *testing.T) {
	t.Parallel()
	d, err := openapitest.New(openapi.YAML(), openapitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range fullSurface() {
		path := describedPath(rt.path)
		op := d.Doc().Paths.Find(path).GetOperation(rt.method)
		var described []string
		if v, ok := op.Extensions["x-scopes"].([]any); ok {
			for _, s := range v {
				described = append(described, fmt.Sprint(s))
			}
		}
		var served []string
		for _, s := range []tokens.Scope{tokens.Platform, tokens.Read, tokens.Establishment} {
			if rt.access != noCredential && rt.access.permits(s) {
				served = append(served, string(s))
			}
		}
		if !slices.Equal(described, served) {
			t.Errorf("%s %s: described x-scopes %q, served %q", rt.method, path, described, served)
		}
	}
}

// TestDescriptionNeedsNoToken: the description and the import schema are served without the
// token, as embedded; every other path still needs it.
func TestDescriptionNeedsNoToken(t *testing.T) {
	t.Parallel()
	a, err := NewAPI(Config{Commands: &app.Commands{}, Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path, contentType string
		body              []byte
	}{
		{openapi.JSONPath, "application/json", openapi.JSON()},
		{openapi.YAMLPath, "application/yaml", openapi.YAML()},
		{openapi.ImportSchemaPath, "application/schema+json", openapi.ImportSchema()},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType || !slices.Equal(body, tc.body) {
			t.Errorf("GET %s: got %d %s, %d bytes; want 200 %s, the embedded %d bytes",
				tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), tc.contentType, len(tc.body))
		}
		post, err := http.Post(srv.URL+tc.path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		post.Body.Close()
		if post.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: got %d, want 405", tc.path, post.StatusCode)
		}
	}
	for _, path := range []string{"/admin/v1/establishments", "/admin/openapi.json/x", "/admin/openapi"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: got %d, want 401", path, resp.StatusCode)
		}
	}
}
