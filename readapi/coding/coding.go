// Package coding negotiates the content coding of an answer: whether a request accepts gzip. The
// read API sends the gzip coding stored with a document, and the reference page the gzip-compressed
// files of Swagger UI, to the clients that accept it.
//
// It imports the standard library only.
package coding

import (
	"net/http"
	"net/textproto"
	"strings"
)

// AcceptsGzip reports whether the Accept-Encoding fields of r accept gzip (RFC 9110, section
// 12.5.3): a "gzip" or "x-gzip" coding, or "*", with a weight above zero. It does not allocate.
func AcceptsGzip(r *http.Request) bool {
	accepted := false
	for _, v := range r.Header["Accept-Encoding"] {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(item, ";")
			coding = textproto.TrimString(coding)
			switch {
			case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				if zeroWeight(params) {
					return false // explicitly refused, whatever "*" says
				}
				accepted = true
			case coding == "*":
				accepted = accepted || !zeroWeight(params)
			}
		}
	}
	return accepted
}

// zeroWeight reports whether the parameters of an Accept-Encoding item set q to zero.
func zeroWeight(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(textproto.TrimString(p), "=")
		if !ok || !strings.EqualFold(textproto.TrimString(name), "q") {
			continue
		}
		value = textproto.TrimString(value)
		if value == "" || value[0] != '0' {
			return false
		}
		for i := 1; i < len(value); i++ {
			if value[i] != '.' && value[i] != '0' {
				return false
			}
		}
		return true
	}
	return false
}
