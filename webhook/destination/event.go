package destination

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/opencarte/publisher/events"
)

// The CloudEvents attributes every event carries.
const (
	SpecVersion = "1.0"
	// EventType is the type of every event: an establishment's content changed, or it started
	// or stopped being served.
	EventType = "establishment.content_updated"
	// DataContentType is the media type of the data.
	DataContentType = "application/json"
	// StructuredContentType is the media type of an event in the structured content mode.
	StructuredContentType = "application/cloudevents+json"
)

// Event is one change as a CloudEvent: what one establishment's cache re-reads.
type Event struct {
	// ID names the change: the same entry read again from the same position (a page published
	// again after a failure or a restart) has the same ID, so consumers drop duplicates by it.
	ID string
	// Source is the service's public URL.
	Source string
	// Subject is the establishment's slug.
	Subject string
	// Time is when the change was stored.
	Time time.Time
	// Data is the entry, as the changes feed and the platform webhook give it.
	Data events.Change
}

// NewEvent returns the event of the entry c, read from the service at source.
func NewEvent(source string, c events.Change) Event {
	return Event{ID: EventID(c), Source: source, Subject: c.Establishment, Time: c.At.UTC(), Data: c}
}

// EventID names the entry c by its establishment, revision, whether it is served and where it was
// read: "<slug>.<revision>.<s|u><sequence>" for a change, "...<S|U><sequence>" for an entry of a
// first sync. Two entries of one revision differ when one is served and the other not, or when
// they were read from different signals (served, then not, then served again).
func EventID(c events.Change) string {
	served := byte('u')
	if c.Served {
		served = 's'
	}
	if c.Synced {
		served -= 'a' - 'A'
	}
	b := make([]byte, 0, len(c.Establishment)+32)
	b = append(b, c.Establishment...)
	b = append(b, '.')
	b = strconv.AppendInt(b, c.Revision, 10)
	b = append(b, '.', served)
	b = strconv.AppendUint(b, c.Seq, 10)
	return string(b)
}

// Attribute is a CloudEvents context attribute and its value as text.
type Attribute struct{ Name, Value string }

// Attributes returns the event's context attributes in the order the specification lists them,
// with datacontenttype: what the binary content mode carries in the broker's headers, each under
// the binding's prefix ("ce_" for Kafka, "cloudEvents_" for AMQP, "ce-" for NATS).
func (e Event) Attributes() []Attribute {
	return []Attribute{
		{"specversion", SpecVersion},
		{"id", e.ID},
		{"source", e.Source},
		{"type", EventType},
		{"subject", e.Subject},
		{"time", e.Time.Format(time.RFC3339Nano)},
		{"datacontenttype", DataContentType},
	}
}

// DataJSON returns the event's data, the body of the binary content mode.
func (e Event) DataJSON() []byte {
	b, _ := json.Marshal(e.Data) // a Change always encodes
	return b
}

// structured is an event in the JSON event format.
type structured struct {
	SpecVersion     string        `json:"specversion"`
	ID              string        `json:"id"`
	Source          string        `json:"source"`
	Type            string        `json:"type"`
	Subject         string        `json:"subject"`
	Time            string        `json:"time"`
	DataContentType string        `json:"datacontenttype"`
	Data            events.Change `json:"data"`
}

// StructuredJSON returns the event in the JSON event format, the body of the structured content
// mode (StructuredContentType).
func (e Event) StructuredJSON() []byte {
	b, _ := json.Marshal(structured{
		SpecVersion: SpecVersion, ID: e.ID, Source: e.Source, Type: EventType, Subject: e.Subject,
		Time: e.Time.Format(time.RFC3339Nano), DataContentType: DataContentType, Data: e.Data,
	})
	return b
}
