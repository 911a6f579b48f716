// Package admin is the admin HTTP API: the back office's way to change content. It is a transport
// only: each handler decodes its request strictly, calls the write side's application layer
// (package app: Commands, and Deliveries for webhook endpoints and their deliveries), and maps
// the error's kind to a status through one table (statuses, in errors.go); keys, ids and secrets
// are minted by app, never here. Its own refusals of a request it cannot read (a body that does
// not parse, is too large or too slow, a bad Idempotency-Key or path value) are *app.Refusal
// values with a kind, answered through the same table: no handler chooses a status. Field errors
// become the details of an answer through fieldDetails only, which names at most
// domain.MaxFieldErrors and counts the rest: an error answer stays within a few tens of kilobytes
// whatever the request. Only the router's own answers (404, 405, a panic's 500) and
// authentication's (401, 429) are written directly.
//
// It imports app, domain, events (for its context-aware sleep), tokens and its description, never
// the webhook dispatcher nor any other role. The surface is one table in routes.go, which a test
// keeps equal to the description's operations; one file per resource beside it.
//
// Every request carries a credential, but those for the API's OpenAPI description and the import
// document's JSON Schema (package openapi, served at /admin/openapi.json, /admin/openapi.yaml and
// /admin/import.schema.json), which hold no secret: the admin token, or a scoped token of package
// tokens. Authentication puts the credential in the request's context, its actor for the
// commands to record (app.WithActor); each route of the table says which scopes it serves, and
// allow (scope.go) refuses the others before the handler runs: 403, but for an establishment
// token meeting an establishment it does not list, which is answered the 404 of one that does not
// exist. The writes that name no establishment are recorded in the platform's audit here
// (recorded); app records those on an establishment. Writes may carry an Idempotency-Key, which names one
// request (method, path, body): its command id derives from them, so a retry is applied once and
// the same key with another body is refused.
//
// POST /admin/v1/import takes many import documents at once, one per line (NDJSON): the
// documents are imported by a bounded pool of workers, and the answer lists, in line order, what
// a PUT of each would have answered, so that one bad line never stops the others. It bounds the
// documents (MaxBatchItems) and bytes (MaxBatchBytes) of a request and the bytes of a line
// (MaxBodyBytes), and reads the body as it comes: a batch costs memory for the documents being
// imported, not for the whole body. Under an Idempotency-Key, each line's command id derives from
// the key, its line number and its bytes.
//
// Uploads (POST /admin/v1/files, PUT .../master-menu with a file, POST .../assets) read their
// files one at a time, each at most domain.MaxMenuFileBytes, and at most Config.Uploads files at
// once in the whole API, so an upload costs one file of memory whatever its body. Under an
// Idempotency-Key, an upload's command id derives from the key and the digests of its files,
// which name the bytes exactly, so its body is never read twice. A body that is not whole (cut
// short, or a multipart framing that mime/multipart refuses) is a 400 naming why, before any
// command: a file ends only where its body or its part says it does.
package admin
