package destination_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook/destination"
)

// TestEventsMatchTheirSchema checks events in the structured mode, and the data of the binary
// mode, against event.schema.json.
func TestEventsMatchTheirSchema(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("event.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	event, err := c.Compile("event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Compile("event.schema.json#/$defs/change")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 14, 9, 30, 30, 123000000, time.UTC)
	for _, ch := range []events.Change{
		{Establishment: "chez-marcel", Revision: 42, Resources: []string{"hours", "menus/plat-du-jour"}, Served: true, Seq: 7, At: at},
		{Establishment: "b", Revision: 1, Resources: []string{"establishment", "hours", "menus"}, Served: false, Seq: 3, Synced: true, At: at},
		{Establishment: "c", Revision: 2, Resources: []string{}, Served: true, Seq: 9, At: at},
	} {
		e := destination.NewEvent("https://menus.example", ch)
		for what, body := range map[string][]byte{"structured": e.StructuredJSON(), "data": e.DataJSON()} {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			schema := event
			if what == "data" {
				schema = data
			}
			if err := schema.Validate(v); err != nil {
				t.Errorf("%s of %+v: %v\n%s", what, ch, err, body)
			}
		}
		var got struct {
			ID, Time string
		}
		_ = json.Unmarshal(e.StructuredJSON(), &got)
		if got.Time != "2026-03-14T09:30:30.123Z" || got.ID != destination.EventID(ch) {
			t.Errorf("id %q, time %q", got.ID, got.Time)
		}
	}
	// The same entry read again from the same position has the same id; another position, or
	// the same revision no longer served, another.
	a := events.Change{Establishment: "a", Revision: 5, Served: true, Seq: 10}
	later, unserved := a, a
	later.Seq, unserved.Served = 11, false
	if destination.EventID(a) != "a.5.s10" || destination.EventID(later) == destination.EventID(a) || destination.EventID(unserved) == destination.EventID(a) {
		t.Errorf("ids %s %s %s", destination.EventID(a), destination.EventID(later), destination.EventID(unserved))
	}
}
