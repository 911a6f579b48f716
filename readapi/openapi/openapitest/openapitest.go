// Package openapitest checks documents and HTTP answers against an OpenAPI description, for
// tests: the read API's published description (package openapi) by default, for the golden
// documents of the projections, the answers of handler tests and the live answers of end-to-end
// tests; any other description through New, such as the admin API's. It also converts a YAML
// description to its JSON twin (YAMLToJSON) and compiles a Go client generated from a description
// (CompileGoClient).
//
// It loads a description with kin-openapi, and validates values with JSON Schema 2020-12 as
// OpenAPI 3.1 prescribes. It is imported by tests only; the service itself serves the embedded
// bytes of its descriptions and never loads this package.
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

// Load returns the read API's description, loaded and validated once. Callers must not modify
// it.
func Load() (*openapi3.T, error) {
	d, err := readAPI()
	if err != nil {
		return nil, err
	}
	return d.doc, nil
}

// ValidateSchema reports how the JSON document body departs from the schema components/schemas
// name of the read API's description; nil when it conforms.
func ValidateSchema(name string, body []byte) error {
	d, err := readAPI()
	if err != nil {
		return err
	}
	return d.ValidateSchema(name, body)
}

// ValidateWebhook reports how the JSON body of a delivery of the webhook event (such as
// establishment.content_updated) departs from the schema the read API's description gives that
// body; nil when it conforms.
func ValidateWebhook(event string, body []byte) error {
	d, err := readAPI()
	if err != nil {
		return err
	}
	return d.ValidateWebhook(event, body)
}

// ValidateResponse reports how an answer of the read API to req departs from its description
// (see Description.ValidateResponse); nil when it conforms. Every path of the read API answers
// GET and HEAD only, and any other method is described as the 405 answer of the path's GET.
func ValidateResponse(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	d, err := readAPI()
	if err != nil {
		return err
	}
	return d.ValidateResponse(ctx, req, status, header, body)
}

// Validate fails tb, without stopping it, when resp departs from the read API's description (see
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

// readAPI is the read API's description, loaded once.
var readAPI = sync.OnceValues(func() (*Description, error) {
	return New(openapi.YAML(), Options{
		GetOnly: true,
		UnknownPath: map[int]string{
			http.StatusNotFound:            "NotFound",
			http.StatusTooManyRequests:     "TooManyRequests",
			http.StatusInternalServerError: "InternalError",
		},
	})
})

// Options says how a service answers the requests its description holds no operation for.
type Options struct {
	// GetOnly says that every path answers GET and HEAD only: the answers to any method are
	// described by the path's GET operation, and another method than GET and HEAD must be
	// answered 405, 429 or 500.
	GetOnly bool
	// UnknownPath names, by status, the components/responses that describe the answers to a path
	// the description does not hold.
	UnknownPath map[int]string
	// OtherMethod names, by status, the components/responses that describe the answers to a
	// method a path holds no operation for. Unused with GetOnly.
	OtherMethod map[int]string
}

// Description is an OpenAPI description loaded to check documents and answers against.
type Description struct {
	doc     *openapi3.T
	router  routers.Router
	getOnly bool
	// unknownPath and otherMethod describe the answers to a path the description does not hold,
	// and to a method a path it holds has no operation for.
	unknownPath, otherMethod *openapi3.Operation
}

// New loads and validates the description data (YAML or JSON) and returns it, to check answers
// of a service that answers as opts says.
func New(data []byte, opts Options) (*Description, error) {
	doc, err := loadDocument(data)
	if err != nil {
		return nil, err
	}
	// Routes are matched on the path alone, the server URL being a variable of the deployment:
	// the router gets its own copy of the description, without servers.
	routed, err := loadDocument(data)
	if err != nil {
		return nil, err
	}
	routed.Servers = nil
	router, err := legacy.NewRouter(routed)
	if err != nil {
		return nil, fmt.Errorf("openapitest: route the description: %w", err)
	}
	d := &Description{doc: doc, router: router, getOnly: opts.GetOnly}
	if d.unknownPath, err = componentAnswers(doc, opts.UnknownPath); err != nil {
		return nil, err
	}
	if d.otherMethod, err = componentAnswers(doc, opts.OtherMethod); err != nil {
		return nil, err
	}
	return d, nil
}

// componentAnswers is an operation answering with the components/responses named by status.
func componentAnswers(doc *openapi3.T, names map[int]string) (*openapi3.Operation, error) {
	responses := openapi3.NewResponses()
	responses.Delete("default")
	for _, status := range slices.Sorted(maps.Keys(names)) {
		ref := doc.Components.Responses[names[status]]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("openapitest: the description has no component response %q for %d", names[status], status)
		}
		responses.Set(strconv.Itoa(status), ref)
	}
	return &openapi3.Operation{Responses: responses}, nil
}

// loadDocument loads and validates a description.
func loadDocument(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the description: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapitest: validate the description: %w", err)
	}
	return doc, nil
}

// Doc returns the loaded description. Callers must not modify it.
func (d *Description) Doc() *openapi3.T { return d.doc }

// ValidateSchema reports how the JSON document body departs from the schema components/schemas
// name; nil when it conforms.
func (d *Description) ValidateSchema(name string, body []byte) error {
	ref := d.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("openapitest: no schema %q in the description", name)
	}
	return validateJSON(ref.Value, body)
}

// ValidateWebhook reports how the JSON body of a delivery of the webhook event departs from the
// schema the description gives that body; nil when it conforms.
func (d *Description) ValidateWebhook(event string, body []byte) error {
	hook := d.doc.Webhooks[event]
	if hook == nil || hook.Post == nil || hook.Post.RequestBody == nil || hook.Post.RequestBody.Value == nil {
		return fmt.Errorf("openapitest: no webhook %q with a body in the description", event)
	}
	media := hook.Post.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return fmt.Errorf("openapitest: webhook %q has no JSON body schema", event)
	}
	return validateJSON(media.Schema.Value, body)
}

// ValidateResponse reports how an answer to req (its status, header fields and body) departs
// from the description; nil when it conforms. The request itself is not validated, so that
// answers to deliberately wrong requests (no credentials, an invalid slug) are checked too.
//
// A path the description does not hold, and a method a path has no operation for, must be
// answered as Options says. The status must be described; every required header field must be
// present and every described one valid; the body must match the schema of its Content-Type, and
// be empty for a HEAD, a 304 or an answer described without content.
func (d *Description) ValidateResponse(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	op, err := d.Operation(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	switch {
	case !d.getOnly, op == d.unknownPath, req.Method == http.MethodGet, req.Method == http.MethodHead:
	case status != http.StatusMethodNotAllowed && status != http.StatusTooManyRequests && status != http.StatusInternalServerError:
		errs = append(errs, fmt.Errorf("a %s request is answered %d, want 405, 429 or 500", req.Method, status))
	}
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return errors.Join(append(errs, fmt.Errorf("status %d is not described for %s %s", status, req.Method, req.URL.Path))...)
	}
	resp := ref.Value
	errs = append(errs, validateHeaders(resp, header)...)
	errs = append(errs, validateBody(resp, req.Method, status, header, body)...)
	return errors.Join(errs...)
}

// Operation returns the operation that describes the answers to req: with Options.GetOnly, the
// GET of its path whatever its method. It is the Options' answers to a path the description does
// not hold, or to a method it has no operation for; its OperationID is then empty.
func (d *Description) Operation(ctx context.Context, req *http.Request) (*openapi3.Operation, error) {
	routed := req.Clone(ctx)
	if d.getOnly {
		routed.Method = http.MethodGet
	}
	route, params, err := d.router.FindRoute(routed)
	if err == nil {
		for _, v := range params {
			if v == "" {
				// The router lets a template variable match an empty segment, which names no
				// resource: /api/v1/establishments/ is a path the description does not hold.
				return d.unknownPath, nil
			}
		}
		return route.Operation, nil
	}
	var routeErr *routers.RouteError
	if !errors.As(err, &routeErr) || routeErr.Reason != routers.ErrPathNotFound.Error() && routeErr.Reason != routers.ErrMethodNotAllowed.Error() {
		return nil, fmt.Errorf("openapitest: find the operation of %s %s: %w", req.Method, req.URL.Path, err)
	}
	if !d.getOnly && d.holdsPath(routed) {
		return d.otherMethod, nil
	}
	return d.unknownPath, nil
}

// holdsPath says whether the description has an operation of any method on the path of req. The
// router tells a method its path lacks from a path it does not hold only for a path without
// template variables.
func (d *Description) holdsPath(req *http.Request) bool {
	other := req.Clone(req.Context())
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace} {
		other.Method = method
		if _, _, err := d.router.FindRoute(other); err == nil {
			return true
		}
	}
	return false
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
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		// The bytes of a file are opaque to a schema, which can only say that they are a string
		// of that media type: the test that sent the request compares them.
		if media.Schema.Value.Type.Is(openapi3.TypeString) {
			return nil
		}
		return []error{fmt.Errorf("Content-Type %q: a schema is only checked for JSON, or a string of bytes", contentType)}
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
