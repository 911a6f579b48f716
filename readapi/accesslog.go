package readapi

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// logRequests writes one line per request to the logger once the answer is written: method,
// path, query, status, body bytes, duration, client address and establishment slug. Request
// headers are never logged, so neither is the API key; the query holds no secret (the key
// travels in a header). Probes (/healthz, /readyz) are logged at Debug, everything else at Info.
//
// A panic that net/http aborts the response with (http.ErrAbortHandler) passes through without
// a line; any other is answered 500 inside and logged like any request.
func (s *Server) logRequests(next http.Handler) http.Handler {
	pool := sync.Pool{New: func() any { return new(statusWriter) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		lw := pool.Get().(*statusWriter)
		*lw = statusWriter{ResponseWriter: w}
		next.ServeHTTP(lw, r)
		level := slog.LevelInfo
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			level = slog.LevelDebug
		}
		s.logger.LogAttrs(r.Context(), level, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("query", r.URL.RawQuery),
			slog.Int("status", lw.statusCode()),
			slog.Int64("bytes", lw.bytes),
			slog.Duration("duration", s.now().Sub(start)),
			slog.Any("ip", s.clientIP(r)),
			slog.String("slug", requestSlug(r)),
		)
		*lw = statusWriter{}
		pool.Put(lw)
	})
}

// requestSlug returns the establishment slug a request names, in its API path or its
// establishment parameter, or "" when it names none or one that is not a valid slug.
func requestSlug(r *http.Request) string {
	var slug string
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/establishments/"); ok {
		slug, _, _ = strings.Cut(rest, "/")
	} else if strings.HasPrefix(r.URL.Path, "/r/") {
		slug, _ = queryValue(r.URL.RawQuery, "establishment")
	}
	if !validSlug(slug) {
		return ""
	}
	return slug
}
