package webhookapp

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/webhook"
)

// The application layer's views of endpoints and deliveries are answered as the dispatcher's own
// would be, byte for byte.
func TestDeliveryViewsEncodeAsTheDispatchers(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 9, 30, 0, 123456789, time.UTC)
	attempt := webhook.Attempt{Number: 2, Redelivery: 1, Time: at, StatusCode: 503, Latency: 1234567 * time.Nanosecond, Error: "http status 503 <&>"}
	ep := webhook.Endpoint{
		ID: "wh_1", Establishment: "chez-marcel", URL: "https://hooks.example.com/in?a=1&b=<2>",
		CreatedAt: at, UpdatedAt: at.Add(time.Hour), Disabled: true, DisabledReason: "gone", DisabledAt: at,
		PreviousSecretUntil: at.Add(24 * time.Hour), Failing: true, FailingSince: at, LastError: "timeout",
		MissedResources: []string{"menus", "hours"},
	}
	d := webhook.Delivery{
		ID: "dl_1", Type: "content.changed", EndpointID: "wh_1", Establishment: "chez-marcel", Revision: 7,
		Resources: []string{"menus"}, CreatedAt: at, Status: webhook.StatusRetrying, Note: "superseded by dl_2",
		NextAttemptAt: at.Add(time.Minute), Redeliveries: 1, Attempts: []webhook.Attempt{attempt, {Number: 1, Time: at}},
		Payload: json.RawMessage(`{"establishment": "chez-marcel", "html": "<b>&</b>"}`),
	}
	cases := []struct {
		name      string
		got, want any
	}{
		{"endpoint", app.EndpointState(ep), ep},
		{"endpoint without state", app.EndpointState(webhook.Endpoint{ID: "wh_2"}), webhook.Endpoint{ID: "wh_2"}},
		{"attempt", app.Attempt(attempt), attempt},
		{"delivery", delivery(d), d},
		{"delivery without attempts", delivery(webhook.Delivery{ID: "dl_3"}), webhook.Delivery{ID: "dl_3"}},
	}
	for _, c := range cases {
		got, want := encode(t, c.got), encode(t, c.want)
		if got != want {
			t.Errorf("%s: got %s, want %s", c.name, got, want)
		}
	}
}

// encode writes v as the admin API does: HTML characters as they are.
func encode(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"v": v}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
