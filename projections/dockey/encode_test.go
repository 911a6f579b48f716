package dockey

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzWriteString checks the string encoder of EncodeBundle against encoding/json without HTML
// escaping: escapes, invalid UTF-8, U+2028 and U+2029 written as encoding/json writes them.
func FuzzWriteString(f *testing.F) {
	for _, s := range []string{"", "chez-alice", "café <b>&</b>", "\x00\u2028\xff\"\\", "a\u2029b\tc\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		writeString(&got, s)
		if !bytes.Equal(got.Bytes(), bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("writeString(%q): got %s, want %s", s, got.Bytes(), want.Bytes())
		}
	})
}
