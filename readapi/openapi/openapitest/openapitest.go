// Package openapitest checks documents and HTTP answers of the read API against its published
// OpenAPI description (package openapi), for tests: the golden documents of the projections, the
// answers of handler tests and the live answers of end-to-end tests.
//
// It loads the description once, with kin-openapi, and validates values with JSON Schema 2020-12
// as OpenAPI 3.1 prescribes. It is imported by tests only; the service itself serves the
// embedded bytes of package openapi and never loads this package.
package openapitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/opencarte/publisher/readapi/openapi"
)

// Load returns the description, loaded and validated once. Callers must not modify it.
func Load() (*openapi3.T, error) {
	s, err := loaded()
	if err != nil {
		return nil, err
	}
	return s.doc, nil
}

// ValidateSchema reports how the JSON document body departs from the schema components/schemas
// name of the description; nil when it conforms.
func ValidateSchema(name string, body []byte) error {
	s, err := loaded()
	if err != nil {
		return err
	}
	ref := s.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("openapitest: no schema %q in the description", name)
	}
	return validateJSON(ref.Value, body)
}

// ValidateResponse reports how an answer to req (its status, header fields and body) departs
// from the description; nil when it conforms. The request itself is not validated, so that
// answers to deliberately wrong requests (no key, an invalid slug) are checked too.
//
// The operation is that of GET on the request's path: every path answers GET and HEAD only, and
// any other method is described as the 405 answer of the path. A path the description does not
// hold must be answered 404, or 429 or 500, with the error body. The status must be described
// (or, for another method than GET and HEAD, be one of 405, 429 and 500); every required header
// field must be present and every described one valid; the body must match the schema of its
// Content-Type, and be empty for a HEAD, a 304 or an answer described without content.
func ValidateResponse(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	s, err := loaded()
	if err != nil {
		return err
	}
	return s.validateResponse(ctx, req, status, header, body)
}

// Validate fails tb, without stopping it, when resp departs from the description (see
// ValidateResponse). body is the body of resp, already read; req is the request it answers, or
// nil for resp.Request.
func Validate(tb testing.TB, req *http.Request, resp *http.Response, body []byte) {
	tb.Helper()
	if req == nil {
		req = resp.Request
	}
	if req == nil {
		tb.Errorf("openapitest: no request for the answer %d", resp.StatusCode)
		return
	}
	if err := ValidateResponse(req.Context(), req, resp.StatusCode, resp.Header, body); err != nil {
		tb.Errorf("%s %s: answer %d departs from the OpenAPI description:\n%v\nbody: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, err, body)
	}
}

// spec is the loaded description with what answers are checked with.
type spec struct {
	doc    *openapi3.T
	router routers.Router
	// unknownPath describes the answers to a path the description does not hold.
	unknownPath *openapi3.Operation
}

var loaded = sync.OnceValues(load)

func load() (*spec, error) {
	doc, err := loadDocument()
	if err != nil {
		return nil, err
	}
	// Routes are matched on the path alone, the server URL being a variable of the deployment:
	// the router gets its own copy of the description, without servers.
	routed, err := loadDocument()
	if err != nil {
		return nil, err
	}
	routed.Servers = nil
	router, err := legacy.NewRouter(routed)
	if err != nil {
		return nil, fmt.Errorf("openapitest: route the description: %w", err)
	}
	responses := doc.Components.Responses
	unknown := &openapi3.Operation{Responses: openapi3.NewResponses(
		openapi3.WithStatus(http.StatusNotFound, responses["NotFound"]),
		openapi3.WithStatus(http.StatusTooManyRequests, responses["TooManyRequests"]),
		openapi3.WithStatus(http.StatusInternalServerError, responses["InternalError"]),
	)}
	for _, status := range []int{http.StatusNotFound, http.StatusTooManyRequests, http.StatusInternalServerError} {
		if r := unknown.Responses.Status(status); r == nil || r.Value == nil {
			return nil, fmt.Errorf("openapitest: the description has no component response for %d", status)
		}
	}
	return &spec{doc: doc, router: router, unknownPath: unknown}, nil
}

// loadDocument loads and validates the embedded description.
func loadDocument() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.YAML())
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the description: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapitest: validate the description: %w", err)
	}
	return doc, nil
}

func (s *spec) validateResponse(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	op, err := s.operation(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	switch {
	case op == s.unknownPath, req.Method == http.MethodGet, req.Method == http.MethodHead:
	case status != http.StatusMethodNotAllowed && status != http.StatusTooManyRequests && status != http.StatusInternalServerError:
		errs = append(errs, fmt.Errorf("a %s request is answered %d, want 405, 429 or 500", req.Method, status))
	}
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return errors.Join(append(errs, fmt.Errorf("status %d is not described for %s", status, req.URL.Path))...)
	}
	resp := ref.Value
	errs = append(errs, validateHeaders(resp, header)...)
	errs = append(errs, validateBody(resp, req.Method, status, header, body)...)
	return errors.Join(errs...)
}

// operation returns the operation that describes the answers to req.
func (s *spec) operation(ctx context.Context, req *http.Request) (*openapi3.Operation, error) {
	get := req.Clone(ctx)
	get.Method = http.MethodGet
	route, params, err := s.router.FindRoute(get)
	if err == nil {
		for _, v := range params {
			if v == "" {
				// The router lets a template variable match an empty segment, which names no
				// resource: /api/v1/establishments/ is a path the description does not hold.
				return s.unknownPath, nil
			}
		}
		return route.Operation, nil
	}
	var routeErr *routers.RouteError
	if errors.As(err, &routeErr) && routeErr.Reason == routers.ErrPathNotFound.Error() {
		return s.unknownPath, nil
	}
	return nil, fmt.Errorf("openapitest: find the operation of %s: %w", req.URL.Path, err)
}

// validateHeaders checks the header fields resp describes: present when required, one line, and
// valid against their schema.
func validateHeaders(resp *openapi3.Response, header http.Header) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(resp.Headers)) {
		ref := resp.Headers[name]
		if ref == nil || ref.Value == nil {
			errs = append(errs, fmt.Errorf("header field %s: not resolved", name))
			continue
		}
		h := ref.Value
		values := header.Values(name)
		switch {
		case len(values) == 0 && h.Required:
			errs = append(errs, fmt.Errorf("header field %s: missing", name))
			continue
		case len(values) == 0:
			continue
		case len(values) > 1:
			errs = append(errs, fmt.Errorf("header field %s: %d lines, want one", name, len(values)))
			continue
		}
		if h.Schema == nil || h.Schema.Value == nil {
			continue
		}
		v, err := headerValue(values[0], h.Schema.Value)
		if err == nil {
			err = h.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("header field %s: %q: %w", name, values[0], err))
		}
	}
	return errs
}

// headerValue decodes a header field value as the JSON value its schema describes: a number for
// an integer or number schema, the text otherwise.
func headerValue(s string, schema *openapi3.Schema) (any, error) {
	switch {
	case schema.Type.Is(openapi3.TypeInteger):
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer: %w", err)
		}
		return float64(n), nil
	case schema.Type.Is(openapi3.TypeNumber):
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number: %w", err)
		}
		return f, nil
	}
	return s, nil
}

// validateBody checks body against the content resp describes.
func validateBody(resp *openapi3.Response, method string, status int, header http.Header, body []byte) []error {
	noBody := method == http.MethodHead || status == http.StatusNotModified || len(resp.Content) == 0
	if noBody && len(body) > 0 {
		return []error{fmt.Errorf("body of %d bytes, want none", len(body))}
	}
	if status == http.StatusNotModified || len(resp.Content) == 0 {
		return nil
	}
	contentType := header.Get("Content-Type")
	if contentType == "" {
		return []error{errors.New("no Content-Type")}
	}
	media := resp.Content.Get(contentType)
	if media == nil {
		return []error{fmt.Errorf("Content-Type %q is not described, want one of %s",
			contentType, strings.Join(slices.Sorted(maps.Keys(resp.Content)), ", "))}
	}
	if method == http.MethodHead || media.Schema == nil {
		return nil
	}
	if media.Schema.Value == nil {
		return []error{errors.New("body schema not resolved")}
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
		// The bytes of a file are opaque to a schema, which can only say that they are a string
		// of that media type: the test that sent the request compares them.
		if media.Schema.Value.Type.Is(openapi3.TypeString) {
			return nil
		}
		return []error{fmt.Errorf("Content-Type %q: a schema is only checked for application/json, or a string of bytes", contentType)}
	}
	if err := validateJSON(media.Schema.Value, body); err != nil {
		return []error{err}
	}
	return nil
}

// validateJSON checks that body is one JSON value valid against schema.
func validateJSON(schema *openapi3.Schema, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}
