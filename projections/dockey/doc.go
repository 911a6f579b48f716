// Package dockey is the one contract between projections, which write rendered documents, and
// readapi, which serves them: the KV bucket, its key layout and the record stored under each key.
//
// One key holds everything the read API knows of one establishment, a Bundle: every rendered
// document of every resource and locale variant plus the small access record that decides
// 401/404/302. Because an establishment lives in one value, a reader switches all its documents to
// a new content_revision at once without any coordination.
//
// EncodeBundle writes a bundle, Decode and DecodeShared read it back: the format is defined here,
// both ways. It is binary: every body is stored byte for byte as rendered, framed by its length,
// so that the served bytes are the rendered bytes their ETag was computed from and a reader
// finds them without scanning them. The bucket may still hold bundles in the JSON form of earlier
// versions (encoding/json's without HTML escaping), which both decoders read.
//
// It imports nothing of this module, and of others only xxhash (the entity tags) and goccy/go-json
// (decoding).
package dockey
