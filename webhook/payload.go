package webhook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Event types of a payload.
const (
	// EventContentUpdated says an establishment's public content reached a new content_revision.
	EventContentUpdated = "establishment.content_updated"
	// EventPing is a test delivery asked for by an operator; it carries no change.
	EventPing = "webhook.ping"
)

// Payload is the JSON body of every delivery, described by payload.schema.json. The body of one
// delivery is the same bytes on every attempt; only the signature headers change.
type Payload struct {
	// ID identifies the delivery, the same on every attempt and redelivery, and equals the
	// webhook-id header: receivers use it to drop duplicates.
	ID string `json:"id"`
	// Type is EventContentUpdated or EventPing.
	Type string `json:"type"`
	// Timestamp is when the delivery was created: the end of the debounce window.
	Timestamp time.Time `json:"timestamp"`
	// Data is the event itself.
	Data PayloadData `json:"data"`
}

// PayloadData is the event of a Payload.
type PayloadData struct {
	// Establishment is the establishment's slug; absent in a ping of a platform endpoint.
	Establishment string `json:"establishment,omitempty"`
	// Revision is the establishment's newest content_revision; absent in a ping.
	Revision int64 `json:"content_revision,omitempty"`
	// Resources lists what changed since the last delivery this endpoint accepted, in the order
	// "establishment", "hours", "menus", then "menus/<menu_type_slug>" by slug, then "jsonld";
	// absent in a ping.
	Resources []string `json:"resources,omitempty"`
	// EndpointID is the pinged endpoint; present in a ping only.
	EndpointID string `json:"endpoint_id,omitempty"`
}

// encodeBody returns the compact JSON body of a delivery, p a Payload or a PlatformPayload.
func encodeBody(p any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// deliveryIDPrefix starts every delivery id.
const deliveryIDPrefix = "msg_"

// newDeliveryID returns "msg_" followed by the creation time in nanoseconds and 8 random bytes,
// all in fixed-width hex: ids sort in creation order, which the delivery log relies on.
func newDeliveryID(now time.Time) string {
	var b [16]byte
	ns := uint64(now.UnixNano())
	for i := range 8 {
		b[i] = byte(ns >> (56 - 8*i))
	}
	_, _ = rand.Read(b[8:]) // never fails, per crypto/rand
	return deliveryIDPrefix + hex.EncodeToString(b[:])
}

// maxTokenLen bounds establishment slugs, endpoint ids and delivery ids, which are KV key parts
// and subject tokens.
const maxTokenLen = 128

// checkKeyPart reports whether s can be one KV key part and one subject token: 1 to maxTokenLen
// ASCII letters, digits, '-' or '_'.
func checkKeyPart(s string) error {
	if s == "" || len(s) > maxTokenLen {
		return fmt.Errorf("length %d, want 1 to %d", len(s), maxTokenLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%q contains %q, want letters, digits, '-' or '_'", s, r)
		}
	}
	return nil
}

func decodeJSON[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
