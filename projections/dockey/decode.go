package dockey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	gojson "github.com/goccy/go-json"
)

// Decode decodes a stored bundle value into v. A value in the binary form EncodeBundle writes
// decodes into a *Bundle alone, which shares none of value's bytes. A value in the JSON form of
// earlier versions decodes into a *Bundle or a pointer to a struct of a subset of its fields, with
// the semantics of encoding/json.Unmarshal: through goccy/go-json, five to ten times faster on
// bundles, which FuzzDecode checks accepts no value encoding/json refuses and gives the same
// result; a value it refuses (or a panic in it) leaves the decision to encoding/json, whose
// answer and error stand.
func Decode(value []byte, v any) error {
	if IsBinary(value) {
		b, ok := v.(*Bundle)
		if !ok {
			return fmt.Errorf("%w: the binary form decodes into a *Bundle, not a %T", errBinary, v)
		}
		return decodeBinary(bytes.Clone(value), b)
	}
	if fastDecode(value, v) {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(value, v)
}

func fastDecode(value []byte, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return gojson.Unmarshal(value, v) == nil
}
