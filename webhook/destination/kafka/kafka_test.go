package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

func kafkaSpec(k *brokertest.Kafka, mode string) destination.Spec {
	return destination.Spec{Type: destination.TypeKafka, Brokers: k.Brokers(), Topic: "menus", ContentMode: mode}
}

func openSpec(t testing.TB, spec destination.Spec, sec destination.Secrets) destination.Sink {
	t.Helper()
	sink, err := kafka.Open(t.Context(), spec, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sink.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sink
}

func open(t testing.TB, k *brokertest.Kafka, mode string) destination.Sink {
	t.Helper()
	return openSpec(t, kafkaSpec(k, mode), destination.Secrets{})
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

// TestBinaryEventsKeyedBySlugInOrder publishes five revisions of twenty establishments in one
// page over four partitions: each event arrives once, keyed by its slug, with the binding's
// headers and its data, and each establishment's events in one partition in revision order.
func TestBinaryEventsKeyedBySlugInOrder(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 4, "menus")
	sink := open(t, k, destination.ModeBinary)
	var evs []destination.Event
	for rev := int64(1); rev <= 5; rev++ {
		for i := range 20 {
			evs = append(evs, brokertest.Events(fmt.Sprintf("chez-%02d", i), rev)...)
		}
	}
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	recs := await(t, follow(t, k), len(evs))
	if len(recs) != len(evs) {
		t.Errorf("read %d records, want %d", len(recs), len(evs))
	}
	byID := map[string]destination.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	partition := map[string]int32{}
	last := map[string]int64{}
	for _, r := range recs {
		e, ok := byID[r.Headers["ce_id"]]
		if !ok {
			t.Fatalf("record %+v: not an event published, or read twice", r)
		}
		delete(byID, e.ID)
		checkBinaryRecord(t, r, e)
		if p, ok := partition[e.Subject]; ok && p != r.Partition {
			t.Errorf("%s in partitions %d and %d", e.Subject, p, r.Partition)
		}
		partition[e.Subject] = r.Partition
		if e.Data.Revision <= last[e.Subject] {
			t.Errorf("%s: revision %d after %d", e.Subject, e.Data.Revision, last[e.Subject])
		}
		last[e.Subject] = e.Data.Revision
	}
	if used := map[int32]bool{}; len(partition) > 0 {
		for _, p := range partition {
			used[p] = true
		}
		if len(used) < 2 {
			t.Errorf("twenty establishments in partitions %v: the keys do not spread", used)
		}
	}
}

// checkBinaryRecord checks r is e in the binary mode of the CloudEvents Kafka binding.
func checkBinaryRecord(t *testing.T, r brokertest.Record, e destination.Event) {
	t.Helper()
	if string(r.Key) != e.Subject {
		t.Errorf("key %q, want the slug %q", r.Key, e.Subject)
	}
	want := map[string]string{
		"ce_specversion": "1.0", "ce_id": e.ID, "ce_source": "https://menus.example", "ce_type": destination.EventType,
		"ce_subject": e.Subject, "ce_time": e.Time.Format(time.RFC3339Nano), "content-type": "application/json",
	}
	if len(r.Headers) != len(want) {
		t.Errorf("headers %v, want %v", r.Headers, want)
	}
	for name, v := range want {
		if r.Headers[name] != v {
			t.Errorf("%s = %q, want %q", name, r.Headers[name], v)
		}
	}
	if _, err := time.Parse(time.RFC3339, r.Headers["ce_time"]); err != nil {
		t.Errorf("ce_time: %v", err)
	}
	var data events.Change
	if err := json.Unmarshal(r.Value, &data); err != nil || data.Establishment != e.Subject || data.Revision != e.Data.Revision || !data.Served {
		t.Errorf("value %s: %v", r.Value, err)
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
		SpecVersion, ID, Source, Type, Subject, Time, DataContentType string
		Data                                                          events.Change
	}
	if err := json.Unmarshal(r.Value, &ev); err != nil || ev.SpecVersion != "1.0" || ev.ID != evs[0].ID || ev.Type != destination.EventType ||
		ev.Subject != "chez-marcel" || ev.DataContentType != "application/json" || ev.Data.Revision != 7 {
		t.Errorf("value %s (%v)", r.Value, err)
	}
	if len(r.Headers) != 1 || r.Headers["content-type"] != destination.StructuredContentType || string(r.Key) != "chez-marcel" {
		t.Errorf("record keyed %q, headers %v", r.Key, r.Headers)
	}
}

// TestBrokerAwayThenBackLosesNothing stops the broker: a Publish fails, naming the topic, and
// the same Sink publishes the page again once the broker is back; the events before the stop
// are still there.
func TestBrokerAwayThenBackLosesNothing(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 2, "menus")
	sink := open(t, k, destination.ModeBinary)
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
		t.Fatal(err)
	}
	k.Stop()
	err := sink.Publish(t.Context(), brokertest.Events("a", 2, 3))
	if err == nil || !strings.Contains(err.Error(), "kafka menus") {
		t.Fatalf("Publish with the broker away: %v, want an error naming the topic", err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = sink.Publish(t.Context(), brokertest.Events("a", 2, 3)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Publish once the broker is back: %v", err)
		}
	}
	recs := await(t, follow(t, k), 3)
	if recs[0].Headers["ce_id"] != brokertest.Events("a", 1)[0].ID {
		t.Errorf("the record before the stop is lost: %+v", recs[0])
	}
	if got := recs[len(recs)-1].Headers["ce_id"]; !strings.HasPrefix(got, "a.3.") {
		t.Errorf("the last record is %s, want revision 3", got)
	}
}

// TestPublishEndsWithItsContext holds the broker's acknowledgements: Publish returns when its
// context ends, the next page waits for the one still being sent, and once the broker answers
// every event arrives, in order.
func TestPublishEndsWithItsContext(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, 1, "menus")
	sink := open(t, k, destination.ModeBinary)
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
		t.Fatal(err)
	}
	release := k.HoldProduce()
	defer release()
	for _, rev := range []int64{2, 3} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := sink.Publish(ctx, brokertest.Events("a", rev))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Publish of revision %d unacknowledged: %v, want the context's end", rev, err)
		}
	}
	release()
	if err := sink.Publish(t.Context(), brokertest.Events("a", 3)); err != nil {
		t.Fatal(err)
	}
	recs := await(t, follow(t, k), 3)
	var revs []string
	for _, r := range recs {
		revs = append(revs, strings.SplitN(r.Headers["ce_id"], ".", 3)[1])
	}
	if got := strings.Join(revs, ","); got != "1,2,3" {
		t.Errorf("revisions read %s, want 1,2,3", got)
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
