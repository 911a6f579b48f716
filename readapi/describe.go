package readapi

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/readapi/openapi"
)

// description is the published OpenAPI document in one of its two forms, served as it is
// embedded: no key, no quota, cacheable by anyone since it holds nothing private.
type description struct {
	body        []byte
	contentType []string
	length      []string
}

var (
	publicCache     = []string{"public, max-age=300"}
	descriptionJSON = newDescription(openapi.JSON(), openapi.JSONContentType)
	descriptionYAML = newDescription(openapi.YAML(), openapi.YAMLContentType)
)

func newDescription(body []byte, contentType string) description {
	return description{body: body, contentType: []string{contentType}, length: []string{strconv.Itoa(len(body))}}
}

func (d *description) serve(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	h := w.Header()
	h["Content-Type"] = d.contentType
	h["Content-Length"] = d.length
	h["Cache-Control"] = publicCache
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(d.body)
	}
}
