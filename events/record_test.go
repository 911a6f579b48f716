package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/events"
)

var testTime = time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)

// validRecord returns a record that Encode accepts.
func validRecord() events.Record {
	return events.Record{
		CommandID:     "cmd-1",
		Establishment: "chez-lou",
		Events: []events.Envelope{
			{ID: "cmd-1/0", Type: "establishment.created", Establishment: "chez-lou", Time: testTime, SchemaVersion: 1, Payload: json.RawMessage(`{"name":"Chez Lou"}`)},
			{ID: "cmd-1/1", Type: "menu_type.added", Establishment: "chez-lou", Time: testTime, SchemaVersion: 2, Payload: json.RawMessage(`["a",1,null]`)},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*events.Record)
	}{
		{"two events", func(*events.Record) {}},
		{"scalar payloads", func(r *events.Record) {
			r.Events[0].Payload = json.RawMessage(`"text"`)
			r.Events[1].Payload = json.RawMessage(`false`)
		}},
		{"html characters kept", func(r *events.Record) {
			r.Events[0].Payload = json.RawMessage(`{"name":"<b>Lou & co</b>"}`)
		}},
		{"time with offset and nanoseconds", func(r *events.Record) {
			r.Events[0].Time = time.Date(2025, 3, 1, 23, 59, 59, 123456789, time.FixedZone("", 3600))
		}},
		{"longest command id", func(r *events.Record) {
			r.CommandID = strings.Repeat("x", events.MaxCommandIDLen)
		}},
		{"unicode slug", func(r *events.Record) {
			r.Establishment = "café"
			for i := range r.Events {
				r.Events[i].Establishment = "café"
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := validRecord()
			tt.modify(&want)
			data, err := events.Encode(want)
			if err != nil {
				t.Fatalf("Encode: got error %v, want nil", err)
			}
			got, err := events.Decode(data)
			if err != nil {
				t.Fatalf("Decode(%s): got error %v, want nil", data, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decode(Encode(r)) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeWireFormat(t *testing.T) {
	t.Parallel()
	r := validRecord()
	r.Sequence = 42
	r.Events = r.Events[:1]
	got, err := events.Encode(r)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	want := `{"command_id":"cmd-1","establishment":"chez-lou","events":[{"id":"cmd-1/0","type":"establishment.created",` +
		`"establishment":"chez-lou","time":"2025-03-01T09:30:00Z","schema_version":1,"payload":{"name":"Chez Lou"}}]}`
	if string(got) != want {
		t.Errorf("Encode:\ngot  %s\nwant %s", got, want)
	}
}

func TestDecodeCompactsPayload(t *testing.T) {
	t.Parallel()
	data := `{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a",` +
		`"time":"2025-03-01T09:30:00Z","schema_version":1,"payload":{ "k" : [ 1, 2 ] }}],"added_later":true}`
	r, err := events.Decode([]byte(data))
	if err != nil {
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	if got, want := string(r.Events[0].Payload), `{"k":[1,2]}`; got != want {
		t.Errorf("payload: got %s, want %s", got, want)
	}
}

func TestRecordValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*events.Record)
	}{
		{"empty command id", func(r *events.Record) { r.CommandID = "" }},
		{"command id too long", func(r *events.Record) { r.CommandID = strings.Repeat("x", events.MaxCommandIDLen+1) }},
		{"command id with space", func(r *events.Record) { r.CommandID = "cmd 1" }},
		{"command id with line break", func(r *events.Record) { r.CommandID = "cmd\r\n1" }},
		{"command id not ascii", func(r *events.Record) { r.CommandID = "commandé" }},
		{"empty establishment", func(r *events.Record) { r.Establishment = "" }},
		{"establishment with dot", func(r *events.Record) { r.Establishment = "chez.lou" }},
		{"establishment with wildcard", func(r *events.Record) { r.Establishment = "*" }},
		{"establishment with tail wildcard", func(r *events.Record) { r.Establishment = "a>" }},
		{"establishment with tab", func(r *events.Record) { r.Establishment = "a\tb" }},
		{"establishment not utf-8", func(r *events.Record) { r.Establishment = "a\xffb" }},
		{"no events", func(r *events.Record) { r.Events = nil }},
		{"empty event list", func(r *events.Record) { r.Events = []events.Envelope{} }},
		{"event without id", func(r *events.Record) { r.Events[1].ID = "" }},
		{"event without type", func(r *events.Record) { r.Events[0].Type = "" }},
		{"event of blank type", func(r *events.Record) { r.Events[0].Type = "  " }},
		{"event of another establishment", func(r *events.Record) { r.Events[1].Establishment = "other" }},
		{"event without time", func(r *events.Record) { r.Events[0].Time = time.Time{} }},
		{"schema version 0", func(r *events.Record) { r.Events[0].SchemaVersion = 0 }},
		{"negative schema version", func(r *events.Record) { r.Events[0].SchemaVersion = -1 }},
		{"no payload", func(r *events.Record) { r.Events[0].Payload = nil }},
		{"null payload", func(r *events.Record) { r.Events[0].Payload = json.RawMessage(` null `) }},
		{"payload not json", func(r *events.Record) { r.Events[0].Payload = json.RawMessage(`{"a":`) }},
		{"payload of two values", func(r *events.Record) { r.Events[0].Payload = json.RawMessage(`1 2`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRecord()
			tt.modify(&r)
			if _, err := events.Encode(r); !errors.Is(err, events.ErrInvalidRecord) {
				t.Errorf("Encode: got error %v, want %v", err, events.ErrInvalidRecord)
			}
			// The same record, written by something else, must be refused when read.
			data, err := json.Marshal(r)
			if err != nil {
				return // not expressible as JSON, so it cannot be read either
			}
			if _, err := events.Decode(data); !errors.Is(err, events.ErrInvalidRecord) {
				t.Errorf("Decode(%s): got error %v, want %v", data, err, events.ErrInvalidRecord)
			}
		})
	}
}

// invalidRecordSeeds are inputs Decode must refuse.
var invalidRecordSeeds = []string{
	``,
	`null`,
	`{}`,
	`[]`,
	`"record"`,
	`{"command_id":"c","establishment":"a","events":[]}`,
	`{"command_id":"c","establishment":"a","events":null}`,
	`{"command_id":"c","establishment":"a","events":[{}]}`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"yesterday","schema_version":1,"payload":{}}]}`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"2025-03-01T09:30:00Z","schema_version":0,"payload":{}}]}`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"2025-03-01T09:30:00Z","schema_version":1}]}`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"2025-03-01T09:30:00Z","schema_version":"1","payload":{}}]}`,
	`{"command_id":"c","establishment":"a.b","events":[{"id":"c/0","type":"t","establishment":"a.b","time":"2025-03-01T09:30:00Z","schema_version":1,"payload":{}}]}`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"2025-03-01T09:30:00Z","schema_version":1,"payload":{}}]} trailing`,
	`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a","time":"2025-03-01T09:30:00Z","schema_version":1,"payload":{}}]`,
	"\x00\xff\xfe",
}

func TestDecodeRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, s := range invalidRecordSeeds {
		if r, err := events.Decode([]byte(s)); !errors.Is(err, events.ErrInvalidRecord) {
			t.Errorf("Decode(%q): got %+v, %v, want error %v", s, r, err, events.ErrInvalidRecord)
		}
	}
}

func FuzzDecode(f *testing.F) {
	valid := validRecord()
	data, err := events.Encode(valid)
	if err != nil {
		f.Fatalf("Encode: %v", err)
	}
	f.Add(data)
	f.Add([]byte(`{"command_id":"c","establishment":"a","events":[{"id":"c/0","type":"t","establishment":"a",` +
		`"time":"2025-03-01T09:30:00.5+02:00","schema_version":3,"payload":{ "k" : "<é>" }}],"x":1}`))
	for _, s := range invalidRecordSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := events.Decode(data)
		if err != nil {
			if !errors.Is(err, events.ErrInvalidRecord) {
				t.Errorf("Decode(%q): got error %v, want one matching %v", data, err, events.ErrInvalidRecord)
			}
			return
		}
		enc, err := events.Encode(r)
		if err != nil {
			t.Fatalf("Encode of decoded %+v: got error %v, want nil", r, err)
		}
		again, err := events.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(%q))): got error %v, want nil", data, err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Errorf("round trip of %q mismatch (-first +second):\n%s", data, diff)
		}
	})
}

// FuzzUnmarshal checks events.Unmarshal against encoding/json on records: the same values
// accepted, decoded the same.
func FuzzUnmarshal(f *testing.F) {
	data, err := events.Encode(validRecord())
	if err != nil {
		f.Fatalf("Encode: %v", err)
	}
	f.Add(data)
	for _, s := range invalidRecordSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"events":[{"payload":{"a":1,}}]}`, `{"events":[{"payload":"\x"}]}`, `{"events":[{"time":"2025-13-01T00:00:00Z"}]}`,
		`{"events":[{"time":"2025-03-01T09:30:00.5+02:00"}]}`, `{"events":[{"schema_version":1.5}]}`, `{"events":null}`,
		`{"command_id":"a","COMMAND_ID":"b"}`, "{\"establishment\":\"\xff\"}", `{"events":[{"payload":01}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got events.Record
		wantErr := json.Unmarshal(data, &want)
		gotErr := events.Unmarshal(data, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("Unmarshal(%q): error %v, encoding/json: %v", data, gotErr, wantErr)
		}
		if wantErr == nil && !cmp.Equal(got, want) {
			t.Fatalf("Unmarshal(%q) mismatch (-encoding/json +Unmarshal):\n%s", data, cmp.Diff(want, got))
		}
	})
}
