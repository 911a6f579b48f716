// Package openapi holds the published OpenAPI 3.1 description of the read API: the four
// /api/v1 endpoints of the specification and the JSON-LD, the file redirects, the probes, the
// description's own paths, the reference page that renders it (/docs, served by readapi/apidocs)
// and the webhooks (establishment.content_updated and webhook.ping, as the webhook package sends
// them).
//
// openapi.yaml is the source. openapi.json is the same document in JSON, generated from it by the
// package tests (go test ./readapi/openapi -update) and checked against it on every run. Both are
// embedded, so the service serves exactly the description kept in the repository.
//
// It imports the standard library only. The validation of documents and live answers against the
// description, which needs kin-openapi, is in the openapitest subpackage, for tests.
//
// Clients generated with their generators' defaults must work: the package tests generate a Go
// client with oapi-codegen and compile it, and, with the npm build tag (go test -tags npm), type
// with tsc the TypeScript client of testdata/typescript, whose types openapi-typescript generates
// and whose calls go through openapi-fetch.
//
// # Invariants
//
//   - Every schema is closed (additionalProperties: false) and lists every key as required, a
//     "T | null" key with a type array including "null": the description says exactly what is
//     served, so a golden document or a live answer with an extra, missing or mistyped field
//     fails validation.
//   - Every golden document of projections/testdata validates against its schema, and the
//     tests prove that a document with an extra key, a missing key or a wrong type does not.
//   - The webhooks refer to no component that only they use: their header fields, bodies and
//     answers are written in the webhooks section, shared through YAML anchors. Client
//     generators with their defaults (oapi-codegen prunes the components no path refers to)
//     then make code that compiles.
//
// # Decisions on what the specification leaves open
//
//   - business_type is an enum of the seven values the service sends: the description validates
//     the service's own output, and its text tells clients to treat an unknown value as a
//     fallback, as values may be added without a version change (the description served is then
//     updated with the service).
//   - locale is a plain string parameter whose documented values are fr and en: any other value
//     is served as fr, never rejected, so it is not an enum.
//   - HEAD is answered on every GET route like GET without the body, and described as an operation
//     of its own on every path: the same parameters, security, statuses and header fields, no
//     body.
//   - Operations that need no key (redirects, probes, the description, the webhooks) say so with
//     security: [], and a nullable day is anyOf a Weekday and null, so that client generators
//     make one type of it. A method other than GET or HEAD is described as the 405
//     answer of each path.
//   - Response header fields are described where the service sends them: ETag, Cache-Control and
//     Content-Revision on documents and 304s, RateLimit-Policy and RateLimit (IETF draft
//     draft-ietf-httpapi-ratelimit-headers) on API answers, Retry-After on 429, Allow on 405,
//     Location on 302.
//   - A MenuItem's price is a string exactly when a_la_carte is true, and an uploaded menu has no
//     sections: both rules of the specification are written as if/then conditions.
//   - The webhook bodies are described as the webhook package writes them, in the Standard
//     Webhooks shape {id, type, timestamp, data}, with both signatures it sends.
package openapi
