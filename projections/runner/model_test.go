package runner

import (
	"log/slog"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/fixture"
)

// BenchmarkReplayDayChangeDemo measures what a replay of the whole log does for the records of
// one day change of the demo, whose menu of the day changes with the date: the day prepared, then
// started.
func BenchmarkReplayDayChangeDemo(b *testing.B) {
	const files = "https://files.example.fr"
	logger := slog.New(slog.DiscardHandler)
	var scratch projections.Scratch
	imported := &tracked{agg: fixture.Load(b, "../../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))}
	imported.replay(logger, files, events.Record{Sequence: 1, Establishment: "chez-marcel",
		Events: fixture.Envelopes(b, domain.DayStarted{Date: fixture.Date(b, "2026-11-22")})}, &scratch)
	next := fixture.Date(b, "2026-11-23")
	day := []events.Record{
		{Sequence: 2, Establishment: "chez-marcel", Events: fixture.Envelopes(b, domain.DayAhead{Date: next, Starts: time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)})},
		{Sequence: 3, Establishment: "chez-marcel", Events: fixture.Envelopes(b, domain.DayStarted{Date: next})},
	}
	b.ReportAllocs()
	for b.Loop() {
		agg := *imported.agg
		t := &tracked{agg: &agg, seq: imported.seq, stored: imported.stored}
		for _, rec := range day {
			t.replay(logger, files, rec, &scratch)
		}
		if t.ahead != nil || t.stored.Revision() != 2 {
			b.Fatalf("day started at revision %d, day ahead %v; want 2, none", t.stored.Revision(), t.ahead != nil)
		}
	}
}
