package openapi_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	yaml "github.com/oasdiff/yaml3"

	"github.com/opencarte/publisher/readapi/openapi/openapitest"
)

// importSchema makes the import document's JSON Schema from the description: its ImportDocument
// schema, as the root's $ref, with every schema it refers to, directly or not, under $defs, in
// the description's order.
func importSchema(description []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(description, &root); err != nil {
		return nil, err
	}
	schemas := lookup(lookup(root.Content[0], "components"), "schemas")
	if schemas == nil {
		return nil, fmt.Errorf("no components.schemas")
	}
	byName := map[string]*yaml.Node{}
	var order []string
	for i := 0; i+1 < len(schemas.Content); i += 2 {
		byName[schemas.Content[i].Value] = schemas.Content[i+1]
		order = append(order, schemas.Content[i].Value)
	}
	needed := map[string]bool{}
	var visit func(name string) error
	visit = func(name string) error {
		if needed[name] {
			return nil
		}
		n := byName[name]
		if n == nil {
			return fmt.Errorf("no schema %q", name)
		}
		needed[name] = true
		for _, ref := range refs(n) {
			if err := visit(ref); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit("ImportDocument"); err != nil {
		return nil, err
	}
	defs := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range order {
		if needed[name] {
			defs.Content = append(defs.Content, scalar(name), rewriteRefs(byName[name]))
		}
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		scalar("$schema"), scalar("https://json-schema.org/draft/2020-12/schema"),
		scalar("title"), scalar("Import document"),
		scalar("description"), scalar("An establishment's whole content, the body of PUT /admin/v1/establishments/{slug} " +
			"and each line of POST /admin/v1/import of the publisher's admin API. Made from the ImportDocument schema of its " +
			"OpenAPI description, /admin/openapi.json."),
		scalar("$ref"), scalar("#/$defs/ImportDocument"),
		scalar("$defs"), defs,
	}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return openapitest.YAMLToJSON(buf.Bytes())
}

const componentPrefix = "#/components/schemas/"

// refs returns the names of the components n refers to.
func refs(n *yaml.Node) []string {
	var out []string
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 && c.Value == "$ref" {
			if name, ok := strings.CutPrefix(n.Content[i+1].Value, componentPrefix); ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
			continue
		}
		out = append(out, refs(c)...)
	}
	return out
}

// rewriteRefs returns a copy of n whose references to components point under $defs.
func rewriteRefs(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = rewriteRefs(child)
		if n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Value == "$ref" {
			c.Content[i].Value = "#/$defs/" + strings.TrimPrefix(child.Value, componentPrefix)
		}
	}
	return &c
}

// lookup returns the value of key in the mapping n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
