package readapi

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/readapi/apidocs"
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

// docsPath is the path of the API reference page, which renders the description; the files it
// loads are under docsPath + "/".
const docsPath = "/docs"

// docsPage is the API reference page: like the description, it needs no key, counts against no
// quota and is the same for every request. It is made of files embedded in the binary, so that
// it fails here only when a test has failed first.
var docsPage = func() *apidocs.Page {
	p, err := apidocs.New(apidocs.Config{
		Path:        docsPath,
		Description: openapi.JSONPath[1:], // relative to the page, which is at the root too
		Title:       "Establishment Content Read API reference",
	})
	if err != nil {
		panic(err)
	}
	return p
}()

func serveDocs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { docsPage.ServeHTTP(w, r) }
