// Package readapi serves the public read API (the four /api/v1 endpoints) and the two file
// redirects (/r/master_menu, /r/menus) from documents it did not make.
//
// # What it owns
//
// A Mirror keeps an in-memory copy of the dockey.Bucket KV bucket with a watcher: the initial
// values, published at once when the watcher reports it has caught up (Ready), then every live
// update. Each value is one dockey.Bundle, the whole public state of one establishment, decoded
// and validated once when it arrives into an immutable entry with its response headers pre-built.
//
// A Server routes requests (httprouter, one routes function), checks the API key, maps failures
// to the specification's status codes and constant JSON error bodies, and writes the stored
// documents. NewHTTPServer gives the http.Server settings every listener uses.
//
// # Imports
//
// The standard library, nats.go's jetstream package, httprouter, and projections/dockey, the key
// layout and record shared with the projector. Never domain, events or rendering code.
//
// # Invariants
//
//   - Served bytes are the stored bytes: a success body is the Body of a dockey.Document, written
//     as it is with the ETag rendered beside it. No JSON is encoded while answering, and no NATS
//     round trip or domain logic happens on a request.
//   - Reads are consistent per establishment: its entry is replaced in one atomic store, so a
//     request never mixes documents or access fields of two revisions.
//   - content_revision never goes backwards: a bundle with a lower revision than the one held is
//     logged and ignored, also after the establishment was deleted from the bucket. An equal
//     revision is applied (an access change, such as a regenerated key, keeps the revision).
//   - A value that cannot be decoded, names another slug, or would make a wrong answer (missing
//     document of a served establishment, malformed ETag, key hash or redirect URL) is logged and
//     skipped; the establishment's previous bundle stays in service.
//   - The success path, 304 included, allocates nothing: header values are shared pre-built
//     slices, the query is scanned in place, the key is hashed on the stack.
//
// # Decisions on what the specification leaves open
//
//   - Auth order (DESIGN.md): a missing or empty X-Api-Key is 401; then an invalid slug (decided
//     before any lookup), an unknown slug, a status other than active, or a disabled API is 404;
//     then a key whose SHA-256 is not the establishment's key hash is 401 (constant-time compare).
//     A key opens only its own establishment. An invalid or unknown menu type is then 404.
//   - locale: for the menu list and detail, absent selects the all-assets variant, "en" the
//     English one, and "fr" or any other value, empty included, the French one; never an error.
//     The establishment and hours endpoints ignore it. Its value is read as url.Values.Get would.
//   - Redirects need no key. Both answer 404 with the JSON error body for an invalid, unknown or
//     non-active establishment or a missing establishment parameter. /r/master_menu serves an
//     active establishment whatever its API and redirect settings and is 404 without a unified
//     file. /r/menus is 404 when menu redirects are off, the menu type is unknown, or no file
//     covers the locale; a locale other than "en", or none, means fr. A 302 has no body.
//   - Every route answers GET and HEAD (HEAD as GET without the body). Another method on a known
//     path is 405 with Allow: GET, HEAD and {"error":"Method not allowed"}; an unknown path is 404
//     {"error":"Not found"}. Paths are matched exactly: no redirect for a trailing slash or case.
//   - If-None-Match (RFC 9110): "*" or a matching entity tag in the list gives a 304 with the ETag
//     and no body. The comparison is the weak one the RFC prescribes for If-None-Match; the tags
//     served are strong.
//   - Cache-Control: no-cache on API answers: caches may keep a body but must revalidate it, so
//     a shared cache never hands a document to a request without a valid key.
//   - A panic in a handler is logged and answered 500 {"error":"Internal server error"}.
//   - Quotas (429 {"error":"Rate limit exceeded"}) are not enforced yet. Their places are fixed:
//     the per-IP quota is a middleware after recover in routes; the per-key quota goes in
//     authorize, after the key check.
package readapi
