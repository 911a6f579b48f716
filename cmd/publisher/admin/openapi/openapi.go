package openapi

import _ "embed" // for the embedded description and schema

// Paths at which the admin API serves the description and the import document's schema, and the
// media type of each.
const (
	YAMLPath              = "/admin/openapi.yaml"
	YAMLContentType       = "application/yaml"
	JSONPath              = "/admin/openapi.json"
	JSONContentType       = "application/json"
	ImportSchemaPath      = "/admin/import.schema.json"
	ImportSchemaMediaType = "application/schema+json"
)

var (
	//go:embed openapi.yaml
	yamlDoc []byte

	//go:embed openapi.json
	jsonDoc []byte

	//go:embed import.schema.json
	importSchema []byte
)

// YAML returns the description in YAML, its source form. The slice is shared by every caller and
// must not be modified.
func YAML() []byte { return yamlDoc }

// JSON returns the description in JSON: the YAML document converted with its key order kept. The
// slice is shared by every caller and must not be modified.
func JSON() []byte { return jsonDoc }

// ImportSchema returns the JSON Schema of the import document: the description's ImportDocument
// schema, with the schemas it refers to under $defs. The slice is shared by every caller and must
// not be modified.
func ImportSchema() []byte { return importSchema }
