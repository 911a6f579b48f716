package kafka_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
	"github.com/opencarte/publisher/webhook/destination/kafka"
)

// await returns the follower's records once it read n of them, or fails the test.
func await(t *testing.T, f *brokertest.Follower, n int) []brokertest.Record {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if recs := f.Records(); len(recs) >= n {
			return recs
		} else if time.Now().After(deadline) {
			t.Fatalf("read %d records, want %d", len(recs), n)
		}
	}
}

func open(t *testing.T, k *brokertest.Kafka, mode string) destination.Sink {
	t.Helper()
	sink, err := kafka.Open(t.Context(), destination.Spec{Type: destination.TypeKafka, Brokers: k.Brokers(), Topic: "menus", ContentMode: mode}, destination.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink
}

func follow(t *testing.T, k *brokertest.Kafka) *brokertest.Follower {
	t.Helper()
	f, err := brokertest.Follow(k.Brokers(), "menus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestBinaryEventsKeyedBySlugInOrder(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 4, "menus")
	sink := open(t, k, destination.ModeBinary)
	var evs []destination.Event
	for rev := int64(1); rev <= 5; rev++ {
		evs = append(evs, brokertest.Events("chez-marcel", rev)...)
		evs = append(evs, brokertest.Events("other", rev)...)
	}
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	recs := await(t, follow(t, k), len(evs))
	byID := map[string]destination.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	partition := map[string]int32{}
	last := map[string]int64{}
	for _, r := range recs {
		e, ok := byID[r.Headers["ce_id"]]
		if !ok {
			t.Fatalf("record %+v: not an event published", r)
		}
		if string(r.Key) != e.Subject {
			t.Errorf("key %q, want the slug %q", r.Key, e.Subject)
		}
		for _, a := range e.Attributes() {
			name := "ce_" + a.Name
			if a.Name == "datacontenttype" {
				name = "content-type"
			}
			if r.Headers[name] != a.Value {
				t.Errorf("%s = %q, want %q", name, r.Headers[name], a.Value)
			}
		}
		var data events.Change
		if err := json.Unmarshal(r.Value, &data); err != nil || data.Revision != e.Data.Revision {
			t.Errorf("value %s: %v", r.Value, err)
		}
		if p, ok := partition[e.Subject]; ok && p != r.Partition {
			t.Errorf("%s in partitions %d and %d", e.Subject, p, r.Partition)
		}
		partition[e.Subject] = r.Partition
		if data.Revision < last[e.Subject] {
			t.Errorf("%s: revision %d after %d", e.Subject, data.Revision, last[e.Subject])
		}
		last[e.Subject] = data.Revision
	}
}

func TestStructuredEvents(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 1, "menus")
	sink := open(t, k, destination.ModeStructured)
	evs := brokertest.Events("chez-marcel", 7)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	r := await(t, follow(t, k), 1)[0]
	var ev struct {
		SpecVersion, ID, Subject string
		Data                     events.Change
	}
	if err := json.Unmarshal(r.Value, &ev); err != nil || ev.SpecVersion != "1.0" || ev.ID != evs[0].ID || ev.Data.Revision != 7 ||
		r.Headers["content-type"] != destination.StructuredContentType || string(r.Key) != "chez-marcel" {
		t.Errorf("record %+v (%v)", r, err)
	}
}

func TestBrokerAwayThenBackLosesNothing(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 2, "menus")
	sink := open(t, k, destination.ModeBinary)
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
		t.Fatal(err)
	}
	k.Stop()
	err := sink.Publish(t.Context(), brokertest.Events("a", 2))
	if err == nil {
		t.Fatal("Publish with the broker away: no error")
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = sink.Publish(t.Context(), brokertest.Events("a", 2)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Publish once the broker is back: %v", err)
		}
	}
	recs := await(t, follow(t, k), 2)
	if got := recs[len(recs)-1].Headers["ce_id"]; !strings.HasPrefix(got, "a.2.") {
		t.Errorf("the last record is %s, want revision 2", got)
	}
	if recs[0].Headers["ce_id"] != brokertest.Events("a", 1)[0].ID {
		t.Errorf("the record before the stop is lost: %+v", recs[0])
	}
}

func TestUnreachableBrokersSayWhich(t *testing.T) {
	t.Parallel()
	_, err := kafka.Open(t.Context(), destination.Spec{Type: destination.TypeKafka, Brokers: []string{"127.0.0.1:1"}, Topic: "menus",
		SASL: &destination.SASL{Mechanism: "PLAIN", Username: "u"}}, destination.Secrets{Password: "sasl-secret-pw"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "sasl-secret-pw") {
		t.Errorf("Open of unreachable brokers: %v, want an error naming them, not the password", err)
	}
}
