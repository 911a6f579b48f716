// Package openapi holds the published OpenAPI 3.1 description of the admin API (every route of
// package admin, its bodies, answers and errors) and the JSON Schema 2020-12 of the import
// document, the body of PUT /admin/v1/establishments/{slug} and of each line of
// POST /admin/v1/import.
//
// openapi.yaml is the source. openapi.json is the same document in JSON, and import.schema.json
// is its ImportDocument schema standing alone (the schemas it refers to under $defs): both are
// generated from it by the package tests (go test ./cmd/publisher/admin/openapi -update) and
// checked against it on every run. All three are embedded, so the admin API serves exactly what
// the repository holds. They hold no secret: the admin API serves them without its token.
//
// It imports the standard library only. The tests check the description with kin-openapi, the
// schema with santhosh-tekuri/jsonschema, the closed lists against the domain's own, and the
// end-to-end tests of package main check every admin answer against it.
//
// # Decisions
//
//   - The import document's optional members may be null, as the write side reads null as
//     absent; its closed lists (business_type, status, rotation, kind, source, language_scope,
//     days) are the write side's, and a test keeps them equal.
//   - An import document's slug is required on a line of a batch, optional on a PUT (the path's).
//   - Every error answer shares one schema, whose error text is one of the statuses' texts.
//   - Answers that depend on the process's roles (GET /admin/v1/status) are open objects; every
//     other schema is closed (additionalProperties: false), so an answer with an undescribed
//     field fails the tests.
package openapi
