package admin

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/admin/openapi"
)

// public holds the paths answered without the token, whatever the method: the description of
// this API and the import document's schema, which hold no secret and tell a client how to
// authenticate. Another method than GET is answered 405 there, as anywhere.
var public = map[string]bool{
	openapi.JSONPath:         true,
	openapi.YAMLPath:         true,
	openapi.ImportSchemaPath: true,
}

// document serves body, embedded in the binary, as contentType: cacheable by anyone, since it
// holds nothing private.
func document(body []byte, contentType string) httprouter.Handle {
	length := strconv.Itoa(len(body))
	return func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", length)
		h.Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}
