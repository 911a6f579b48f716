package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// ValidateRequest reports how req departs from the operation that describes it: its path, query
// and header parameters, and body, the bytes it sent, when the operation describes a JSON body
// and req sends one; nil when it conforms. Credentials are not checked. Tests call it for the
// requests a service accepted: what the service accepts, its description must describe.
func (d *Description) ValidateRequest(ctx context.Context, req *http.Request, body []byte) error {
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("openapitest: find the operation of %s %s: %w", req.Method, req.URL.Path, err)
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	json := mt == "application/json" && route.Operation.RequestBody != nil &&
		route.Operation.RequestBody.Value.Content.Get("application/json") != nil
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			ExcludeRequestBody: !json,
			MultiError:         true,
		},
	})
}
