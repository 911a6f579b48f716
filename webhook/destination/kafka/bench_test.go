package kafka_test

import (
	"fmt"
	"testing"

	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// BenchmarkPublish publishes pages of 1,000 events of 1,000 establishments to a broker in
// process with eight partitions: the publication's rate, for the scale benchmark.
func BenchmarkPublish(b *testing.B) {
	k := brokertest.StartKafka(b, 8, "menus")
	sink := open(b, k, destination.ModeBinary)
	evs := make([]destination.Event, 0, 1000)
	for i := range cap(evs) {
		evs = append(evs, brokertest.Events(fmt.Sprintf("establishment-%04d", i), int64(i+1))...)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sink.Publish(b.Context(), evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}
