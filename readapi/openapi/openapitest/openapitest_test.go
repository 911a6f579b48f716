package openapitest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencarte/publisher/readapi/openapi"
	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "projections", "testdata", "demo", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// documentHeader returns the header fields of a served document.
func documentHeader() http.Header {
	return http.Header{
		"Content-Type":     {"application/json"},
		"Etag":             {`"95883610b6bd2096"`},
		"Cache-Control":    {"private, no-cache"},
		"Content-Revision": {"1"},
		"Ratelimit-Policy": {`"ip";q=500;w=3600, "key";q=120;w=3600`},
		"Ratelimit":        {`"key";r=119;t=30`},
	}
}

func errorHeader(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

func with(h http.Header, name, value string) http.Header {
	h = h.Clone()
	if value == "" {
		h.Del(name)
	} else {
		h.Set(name, value)
	}
	return h
}

type exchange struct {
	name   string
	method string
	target string
	status int
	header http.Header
	body   string
}

func TestConformingAnswers(t *testing.T) {
	t.Parallel()
	establishment := string(golden(t, "establishment.json"))
	for _, tc := range []exchange{
		{"establishment", "GET", "/api/v1/establishments/chez-marcel", 200, documentHeader(), establishment},
		{"establishment without quotas", "GET", "/api/v1/establishments/chez-marcel", 200,
			with(with(documentHeader(), "RateLimit", ""), "RateLimit-Policy", ""), establishment},
		{"establishment, HEAD", "HEAD", "/api/v1/establishments/chez-marcel", 200, documentHeader(), ""},
		{"hours", "GET", "/api/v1/establishments/chez-marcel/hours", 200, documentHeader(), string(golden(t, "hours.json"))},
		{"menus, unknown locale", "GET", "/api/v1/establishments/chez-marcel/menus?locale=de", 200, documentHeader(), string(golden(t, "menus.fr.json"))},
		{"menu", "GET", "/api/v1/establishments/chez-marcel/menus/la-carte?locale=en", 200, documentHeader(), string(golden(t, "menu.la-carte.en.json"))},
		{"not modified", "GET", "/api/v1/establishments/chez-marcel/hours", 304,
			with(documentHeader(), "Content-Type", ""), ""},
		{"not modified, HEAD", "HEAD", "/api/v1/establishments/chez-marcel/menus", 304,
			with(documentHeader(), "Content-Type", ""), ""},
		{"no key", "GET", "/api/v1/establishments/chez-marcel", 401, errorHeader(), `{"error":"Unauthorized"}`},
		{"invalid slug", "GET", "/api/v1/establishments/Chez_Marcel", 404, errorHeader(), `{"error":"Not found"}`},
		{"unknown menu type", "GET", "/api/v1/establishments/chez-marcel/menus/brunch", 404, errorHeader(), `{"error":"Not found"}`},
		{"unknown path", "GET", "/api/v2/establishments/chez-marcel", 404, errorHeader(), `{"error":"Not found"}`},
		{"unknown path, POST", "POST", "/favicon.ico", 404, errorHeader(), `{"error":"Not found"}`},
		{"trailing slash", "GET", "/api/v1/establishments/chez-marcel/", 404, errorHeader(), `{"error":"Not found"}`},
		{"other method", "DELETE", "/api/v1/establishments/chez-marcel", 405,
			errorHeader("Allow", "GET, HEAD"), `{"error":"Method not allowed"}`},
		{"other method on a redirect", "POST", "/r/menus", 405,
			errorHeader("Allow", "GET, HEAD"), `{"error":"Method not allowed"}`},
		{"quota", "GET", "/api/v1/establishments/chez-marcel/menus", 429,
			errorHeader("Retry-After", "30", "RateLimit-Policy", `"key";q=120;w=3600`, "RateLimit", `"key";r=0;t=30`),
			`{"error":"Rate limit exceeded"}`},
		{"quota, HEAD", "HEAD", "/api/v1/establishments/chez-marcel/menus", 429, errorHeader("Retry-After", "1"), ""},
		{"panic", "GET", "/api/v1/establishments/chez-marcel", 500, errorHeader(), `{"error":"Internal server error"}`},
		{"master menu", "GET", "/r/master_menu?establishment=chez-marcel", 302,
			http.Header{"Location": {"https://cdn.chez-marcel.example.fr/carte-complete.pdf"}}, ""},
		{"menu file", "GET", "/r/menus?establishment=chez-marcel&menu_type=la-carte&locale=en", 302,
			http.Header{"Location": {"https://cdn.chez-marcel.example.fr/carte-en-1.jpg"}}, ""},
		{"no menu file", "GET", "/r/menus?establishment=chez-marcel&menu_type=menu-du-jour", 404, errorHeader(), `{"error":"Not found"}`},
		{"redirect quota", "GET", "/r/master_menu?establishment=chez-marcel", 429,
			errorHeader("Retry-After", "7", "RateLimit-Policy", `"redirect";q=500;w=3600`, "RateLimit", `"redirect";r=0;t=7`),
			`{"error":"Rate limit exceeded"}`},
		{"health", "GET", "/healthz", 200, errorHeader(), `{"status":"ok"}`},
		{"ready", "GET", "/readyz", 200, errorHeader(), `{"status":"ok"}`},
		{"not ready", "GET", "/readyz", 503, errorHeader(), `{"error":"Not ready"}`},
		{"description, JSON", "GET", openapi.JSONPath, 200,
			http.Header{"Content-Type": {openapi.JSONContentType}}, string(openapi.JSON())},
		{"description, YAML", "GET", openapi.YAMLPath, 200,
			http.Header{"Content-Type": {openapi.YAMLContentType}}, string(openapi.YAML())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if err := openapitest.ValidateResponse(context.Background(), req, tc.status, tc.header, []byte(tc.body)); err != nil {
				t.Errorf("%s %s answered %d: %v", tc.method, tc.target, tc.status, err)
			}
		})
	}
}

func TestDepartingAnswers(t *testing.T) {
	t.Parallel()
	establishment := string(golden(t, "establishment.json"))
	extraField := `{"language":"fr","content_revision":1,"name":"X","description":null,"business_type":"bar",` +
		`"public_category":null,"category":null,"website_url":null,"menu_url":null,` +
		`"contact":{"email":null,"phone_number":null},"location":{"address":null,"latitude":null,"longitude":null},` +
		`"logo_url":null,"slug":"x"}`
	const doc = "/api/v1/establishments/chez-marcel"
	for _, tc := range []exchange{
		{"extra field", "GET", doc, 200, documentHeader(), extraField},
		{"wrong schema", "GET", doc + "/hours", 200, documentHeader(), establishment},
		{"no ETag", "GET", doc, 200, with(documentHeader(), "ETag", ""), establishment},
		{"weak ETag", "GET", doc, 200, with(documentHeader(), "ETag", `W/"95883610b6bd2096"`), establishment},
		{"no Cache-Control", "GET", doc, 200, with(documentHeader(), "Cache-Control", ""), establishment},
		{"no Content-Revision", "GET", doc, 200, with(documentHeader(), "Content-Revision", ""), establishment},
		{"Content-Revision not a number", "GET", doc, 200, with(documentHeader(), "Content-Revision", "one"), establishment},
		{"malformed RateLimit", "GET", doc, 200, with(documentHeader(), "RateLimit", "119"), establishment},
		{"malformed RateLimit-Policy", "GET", doc, 200, with(documentHeader(), "RateLimit-Policy", "120;w=3600"), establishment},
		{"two ETag lines", "GET", doc, 200, func() http.Header {
			h := documentHeader()
			h.Add("ETag", `"0000000000000000"`)
			return h
		}(), establishment},
		{"text/plain", "GET", doc, 200, with(documentHeader(), "Content-Type", "text/plain"), establishment},
		{"no Content-Type", "GET", doc, 200, with(documentHeader(), "Content-Type", ""), establishment},
		{"not JSON", "GET", doc, 200, documentHeader(), `{"language":"fr"`},
		{"HEAD with a body", "HEAD", doc, 200, documentHeader(), establishment},
		{"HEAD with another Content-Type", "HEAD", doc, 200, with(documentHeader(), "Content-Type", "text/html"), ""},
		{"304 with a body", "GET", doc, 304, documentHeader(), establishment},
		{"304 without ETag", "GET", doc, 304, with(documentHeader(), "ETag", ""), ""},
		{"undescribed status", "GET", doc, 418, errorHeader(), `{"error":"I'm a teapot"}`},
		{"400 for an invalid slug", "GET", "/api/v1/establishments/Chez_Marcel", 400, errorHeader(), `{"error":"Bad request"}`},
		{"error body of another shape", "GET", doc, 401, errorHeader(), `{"message":"Unauthorized"}`},
		{"error as text", "GET", doc, 404, with(errorHeader(), "Content-Type", "text/plain"), "Not found"},
		{"405 without Allow", "PUT", doc, 405, errorHeader(), `{"error":"Method not allowed"}`},
		{"405 with another Allow", "PUT", doc, 405, errorHeader("Allow", "GET"), `{"error":"Method not allowed"}`},
		{"other method served", "POST", doc, 200, documentHeader(), establishment},
		{"429 without Retry-After", "GET", doc, 429, errorHeader(), `{"error":"Rate limit exceeded"}`},
		{"Retry-After as a date", "GET", doc, 429,
			errorHeader("Retry-After", "Sun, 22 Nov 2026 10:00:00 GMT"), `{"error":"Rate limit exceeded"}`},
		{"302 without Location", "GET", "/r/master_menu?establishment=chez-marcel", 302, http.Header{}, ""},
		{"302 to a relative URL", "GET", "/r/master_menu?establishment=chez-marcel", 302,
			http.Header{"Location": {"/carte.pdf"}}, ""},
		{"302 with a body", "GET", "/r/master_menu?establishment=chez-marcel", 302,
			http.Header{"Location": {"https://cdn.example.fr/carte.pdf"}, "Content-Type": {"text/html"}}, "<a>Found</a>"},
		{"redirect answered 401", "GET", "/r/menus?establishment=chez-marcel&menu_type=la-carte", 401,
			errorHeader(), `{"error":"Unauthorized"}`},
		{"unknown path served", "GET", "/api/v1/establishments", 200, documentHeader(), establishment},
		{"health of another shape", "GET", "/healthz", 200, errorHeader(), `{"status":"up"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if err := openapitest.ValidateResponse(context.Background(), req, tc.status, tc.header, []byte(tc.body)); err == nil {
				t.Errorf("%s %s answered %d conforms, want it rejected", tc.method, tc.target, tc.status)
			}
		})
	}
}

// TestValidate runs the helper of end-to-end tests over a real HTTP exchange.
func TestValidate(t *testing.T) {
	t.Parallel()
	body := golden(t, "menus.all.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range documentHeader() {
			w.Header()[k] = v
		}
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, err := http.NewRequest(method, srv.URL+"/api/v1/establishments/chez-marcel/menus", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", "pk_test")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		openapitest.Validate(t, req, resp, b)
		openapitest.Validate(t, nil, resp, b)
	}
}

func TestValidateSchemaUnknownName(t *testing.T) {
	t.Parallel()
	if err := openapitest.ValidateSchema("Restaurant", []byte(`{}`)); err == nil {
		t.Error("an unknown schema name is accepted")
	}
}

// A description of a service that answers every method its paths describe, and refuses others
// with answers of its components.
const anyMethod = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
    put:
      operationId: putThing
      requestBody:
        content:
          application/json:
            schema: {type: object}
      responses:
        "200":
          description: stored
          content:
            application/json:
              schema:
                type: object
                properties: {id: {type: string}}
                required: [id]
                additionalProperties: false
components:
  responses:
    NotFound:
      description: no such path
      content:
        application/json:
          schema: {type: object, required: [error], properties: {error: {const: Not found}}}
    MethodNotAllowed:
      description: no such method
      content:
        application/json:
          schema: {type: object, required: [error], properties: {error: {const: Method not allowed}}}
`

func TestDescriptionOfAnyMethod(t *testing.T) {
	t.Parallel()
	d, err := openapitest.New([]byte(anyMethod), openapitest.Options{
		UnknownPath: map[int]string{http.StatusNotFound: "NotFound"},
		OtherMethod: map[int]string{http.StatusMethodNotAllowed: "MethodNotAllowed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	json := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		method, target string
		status         int
		body           string
		valid          bool
	}{
		{"PUT", "/things/a", 200, `{"id":"a"}`, true},
		{"PUT", "/things/a", 200, `{"id":"a","extra":1}`, false},
		{"PUT", "/things/a", 201, `{"id":"a"}`, false},
		{"GET", "/things/a", 405, `{"error":"Method not allowed"}`, true},
		{"GET", "/things/a", 200, `{"id":"a"}`, false},
		{"DELETE", "/things/a", 404, `{"error":"Not found"}`, false},
		{"PUT", "/nothing", 404, `{"error":"Not found"}`, true},
		{"PUT", "/nothing", 405, `{"error":"Method not allowed"}`, false},
		{"PUT", "/nothing", 404, `{"error":"Gone"}`, false},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		err := d.ValidateResponse(context.Background(), req, tc.status, json, []byte(tc.body))
		if (err == nil) != tc.valid {
			t.Errorf("%s %s answered %d %s: error %v, want valid %t", tc.method, tc.target, tc.status, tc.body, err, tc.valid)
		}
	}
	req := httptest.NewRequest("PUT", "/things/a", nil)
	if op, err := d.Operation(context.Background(), req); err != nil || op.OperationID != "putThing" {
		t.Errorf("operation of PUT /things/a: %v, %v; want putThing", op, err)
	}
}
