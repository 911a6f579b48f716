package readapi

import (
	"net/http"
	"net/textproto"
	"strings"
)

// Canonical forms of the conditional request fields.
const (
	ifNoneMatchHeader = "If-None-Match"
	ifMatchHeader     = "If-Match"
)

// matchesIfMatch reports whether the If-Match field values match the document, whose tags are
// etag and, when it has a gzip coding, gzipETag: "*" matches, and so does a strong tag equal to
// either (both name the same content). A weak tag never matches: If-Match compares strongly.
func matchesIfMatch(values []string, etag, gzipETag string) bool {
	for _, list := range values {
		if anyETag(list, func(tag string) bool { return tag == etag || gzipETag != "" && tag == gzipETag }) {
			return true
		}
	}
	return false
}

// notModified reports whether the If-None-Match header of r matches etag, so that the answer is a
// 304. It follows RFC 9110, section 13.1.2: "*" matches any current representation, and a list
// matches when one of its entity tags matches under the weak comparison that section requires for
// If-None-Match (our tags are strong; W/"x" still names the same bytes as "x", e.g. after a proxy
// weakened the tag). Parsing stops at the first malformed element, as net/http does.
func notModified(r *http.Request, etag string) bool {
	for _, v := range r.Header[ifNoneMatchHeader] {
		if matchesETag(v, etag) {
			return true
		}
	}
	return false
}

// matchesETag reports whether the If-None-Match field value list matches etag.
func matchesETag(list, etag string) bool {
	return anyETag(list, func(tag string) bool { return strings.TrimPrefix(tag, "W/") == etag })
}

// anyETag reports whether the field value list is "*" or holds an entity tag for which match
// reports true. Parsing stops at the first malformed element, as net/http does.
func anyETag(list string, match func(tag string) bool) bool {
	for {
		list = textproto.TrimString(list)
		if list == "" {
			return false
		}
		if list[0] == ',' {
			list = list[1:]
			continue
		}
		if list[0] == '*' {
			return true
		}
		tag, rest := scanETag(list)
		if tag == "" {
			return false
		}
		if match(tag) {
			return true
		}
		list = rest
	}
}

// scanETag returns the entity tag at the start of s, weak or strong, and what follows it; tag is
// empty when s does not start with one.
func scanETag(s string) (tag, rest string) {
	start := 0
	if strings.HasPrefix(s, "W/") {
		start = 2
	}
	if len(s)-start < 2 || s[start] != '"' {
		return "", ""
	}
	for i := start + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[:i+1], s[i+1:]
		case !etagChar(c):
			return "", ""
		}
	}
	return "", ""
}
