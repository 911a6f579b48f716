// Package apidocs serves an API reference page: Swagger UI, embedded in the binary, rendering an
// OpenAPI description served by the same origin. The read API mounts one at /docs for its
// description, the admin listener one at /admin/docs for the admin API's. Neither needs a key or
// a token: the page and the descriptions hold no secret.
//
// It imports the standard library, readapi/coding (whether a client accepts gzip) and the Swagger
// UI files of the swgui module (github.com/swaggest/swgui/v5/static, gzip-compressed as the module
// embeds them), nothing else.
//
// # Invariants
//
//   - The page makes no request outside its origin, and works offline: every file it loads is
//     embedded, its Content-Security-Policy allows no other origin, Swagger UI's validator badge
//     (which calls validator.swagger.io) is off, and so is its top bar, which loads a description
//     from any URL typed in.
//   - The page holds no inline script, so that the policy allows none.
//   - The files are named with the version of the set (?v=), and with it cached for a year; the
//     page itself is revalidated at each use, so that a new version of the service names new files.
//   - A compressed file is sent as it is embedded to a client that accepts gzip, and decompressed
//     for one that does not.
package apidocs
