package events_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/events"
)

// referenceEncode is what encoding/json writes for r, payloads compacted, without HTML escaping:
// the wire format Encode writes by hand.
func referenceEncode(r events.Record) ([]byte, error) {
	for i := range r.Events {
		var c bytes.Buffer
		if err := json.Compact(&c, r.Events[i].Payload); err != nil {
			return nil, err
		}
		r.Events[i].Payload = c.Bytes()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// FuzzEncode checks that every record Encode accepts is written byte for byte as encoding/json
// would write it, and reads back as it was.
func FuzzEncode(f *testing.F) {
	f.Add("cmd-1", "chez-lou", "establishment.created", `{"name":"Chez Lou"}`, int64(1740821400), 1)
	f.Add("c", "café", "t\u2028\"x\\", `{ "k" : [ 1, 2 ], "h": "<b>&</b>" }`, int64(0), 3)
	f.Add("idem_ab.cd", "a\x7fb", "type\x01\ttab", `"text"`, int64(-1), 1)
	f.Add("c", "e", "t", `null`, int64(5), 1)
	// Compact but not JSON: Encode must refuse them as json.Compact does.
	for _, p := range []string{`{"a":1,}`, `[1,]`, `01`, `"\u12"`, `{"a"1}`, `nul`, "\"\x01\"", `{}{}`} {
		f.Add("c", "e", "t", p, int64(5), 1)
	}
	f.Fuzz(func(t *testing.T, id, slug, typ, payload string, sec int64, schema int) {
		r := events.Record{CommandID: id, Establishment: slug, Events: []events.Envelope{{
			ID: id + "/0", Type: typ, Establishment: slug, Time: time.Unix(sec, 0).UTC(),
			SchemaVersion: schema, Payload: json.RawMessage(payload),
		}}}
		got, err := events.Encode(r)
		if err != nil {
			return
		}
		want, err := referenceEncode(r)
		if err != nil {
			t.Fatalf("Encode accepted a record encoding/json refuses: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode:\ngot  %s\nwant %s", got, want)
		}
		back, err := events.Decode(got)
		if err != nil {
			t.Fatalf("Decode(Encode(r)): %v", err)
		}
		r.Events[0].Payload = json.RawMessage(want[bytes.Index(want, []byte(`"payload":`))+len(`"payload":`) : len(want)-3])
		if diff := cmp.Diff(r, back); diff != "" {
			t.Fatalf("Decode(Encode(r)) (-want +got):\n%s", diff)
		}
	})
}
