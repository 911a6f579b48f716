package events

import (
	"encoding/json"
	"reflect"

	gojson "github.com/goccy/go-json"
)

// Unmarshal decodes data into v, a pointer, with the semantics of encoding/json.Unmarshal. A
// reader of the whole log decodes every record and every event in it, so the decoding is
// goccy/go-json's, several times faster; FuzzUnmarshal checks that it accepts no record
// encoding/json refuses and decodes the same. A value it refuses (or a panic in it) leaves the
// decision to encoding/json, whose answer and error stand.
func Unmarshal(data []byte, v any) error {
	if fastUnmarshal(data, v) {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(data, v)
}

func fastUnmarshal(data []byte, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return gojson.Unmarshal(data, v) == nil
}
