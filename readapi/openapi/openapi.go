package openapi

import _ "embed" // for the embedded description

// Paths at which the read API serves the description, and the media type of each.
const (
	YAMLPath        = "/openapi.yaml"
	YAMLContentType = "application/yaml"
	JSONPath        = "/openapi.json"
	JSONContentType = "application/json"
)

var (
	//go:embed openapi.yaml
	yamlDoc []byte

	//go:embed openapi.json
	jsonDoc []byte
)

// YAML returns the description in YAML, its source form. The slice is shared by every caller and
// must not be modified.
func YAML() []byte { return yamlDoc }

// JSON returns the description in JSON: the YAML document converted with its key order kept. The
// slice is shared by every caller and must not be modified.
func JSON() []byte { return jsonDoc }
