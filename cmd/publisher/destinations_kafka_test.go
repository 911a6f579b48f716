package main

import (
	"encoding/json"
	"testing"

	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// A Kafka destination, on a broker that speaks the Kafka protocol in process, consumed by a
// Kafka client: the end-to-end checks of testDestinationsThroughServe.
func TestKafkaDestinationThroughServe(t *testing.T) {
	k := brokertest.StartKafka(t, 3, "menus-all", "menus-only")
	followers := map[string]*brokertest.Follower{}
	for _, name := range []string{"all", "only"} {
		f, err := brokertest.Follow(k.Brokers(), "menus-"+name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		followers[name] = f
	}
	testDestinationsThroughServe(t, brokerUnderTest{
		fields: func(name string) map[string]any {
			return map[string]any{"type": "kafka", "brokers": k.Brokers(), "topic": "menus-" + name}
		},
		received: func(t *testing.T, name string) []brokerEvent {
			var out []brokerEvent
			for _, r := range followers[name].Records() {
				e := brokerEvent{
					ID: r.Headers["ce_id"], Source: r.Headers["ce_source"], Type: r.Headers["ce_type"],
					Subject: r.Headers["ce_subject"], SpecVersion: r.Headers["ce_specversion"], Time: r.Headers["ce_time"],
				}
				if err := json.Unmarshal(r.Value, &e.Data); err != nil {
					t.Fatalf("record %d of %s: %v", r.Offset, name, err)
				}
				if string(r.Key) != e.Subject || r.Headers["content-type"] != "application/json" {
					t.Errorf("record of %s keyed %q, content-type %q", e.Subject, r.Key, r.Headers["content-type"])
				}
				out = append(out, e)
			}
			return out
		},
		stop: func(*testing.T) { k.Stop() },
		start: func(t *testing.T) {
			if err := k.Start(); err != nil {
				t.Fatal(err)
			}
		},
	})
}
