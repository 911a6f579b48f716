package events

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCompact checks that compact tells exactly the JSON values json.Compact leaves unchanged.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, `"a b"`, `["x\" ",1]`, "[1,\n2]", `"\\" `, `{"k":"\\\\"}`, ` 1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			t.Fatal(err)
		}
		if got, want := compact(v), bytes.Equal(buf.Bytes(), v); got != want {
			t.Errorf("compact(%q) = %v, json.Compact says %v", v, got, want)
		}
	})
}
