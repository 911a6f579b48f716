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
	logger := slog.New(slog.DiscardHandler)
	var scratch projections.Scratch
	imported, day := demoDayChange(b, logger, &scratch)
	b.ReportAllocs()
	for b.Loop() {
		agg := *imported.agg
		t := &tracked{agg: &agg, seq: imported.seq, stored: imported.stored}
		for _, rec := range day {
			t.replay(logger, demoFiles, rec, &scratch)
		}
		if t.ahead != nil || t.stored.Revision() != 2 {
			b.Fatalf("day started at revision %d, day ahead %v; want 2, none", t.stored.Revision(), t.ahead != nil)
		}
	}
}

// A replay decides the start of the day ahead it summarizes without rendering: the documents of
// the demo take hundreds of allocations to render, the decision a handful.
func TestReplayStartsADayAheadWithoutRendering(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	var scratch projections.Scratch
	imported, day := demoDayChange(t, logger, &scratch)
	agg := *imported.agg
	ahead := &tracked{agg: &agg, seq: imported.seq, stored: imported.stored}
	ahead.replay(logger, demoFiles, day[0], &scratch)
	if ahead.ahead == nil {
		t.Fatal("no day ahead replayed")
	}
	allocs := testing.AllocsPerRun(20, func() {
		agg := *ahead.agg
		t := &tracked{agg: &agg, seq: ahead.seq, stored: ahead.stored, ahead: ahead.ahead}
		t.replay(logger, demoFiles, day[1], &scratch)
	})
	if allocs > 10 {
		t.Errorf("the day started took %.0f allocations to replay; want at most 10, no rendering", allocs)
	}
}

// demoFiles is the base URL of uploaded files the demo is replayed under.
const demoFiles = "https://files.example.fr"

// demoDayChange returns the demo replayed on 2026-11-22, and the records of its next day: the day
// prepared, then started.
func demoDayChange(tb testing.TB, logger *slog.Logger, scratch *projections.Scratch) (*tracked, []events.Record) {
	tb.Helper()
	imported := &tracked{agg: fixture.Load(tb, "../../cmd/publisher/demo.json", fixture.Date(tb, "2026-11-22"))}
	imported.replay(logger, demoFiles, events.Record{Sequence: 1, Establishment: "chez-marcel",
		Events: fixture.Envelopes(tb, domain.DayStarted{Date: fixture.Date(tb, "2026-11-22")})}, scratch)
	next := fixture.Date(tb, "2026-11-23")
	return imported, []events.Record{
		{Sequence: 2, Establishment: "chez-marcel", Events: fixture.Envelopes(tb, domain.DayAhead{Date: next, Starts: time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)})},
		{Sequence: 3, Establishment: "chez-marcel", Events: fixture.Envelopes(tb, domain.DayStarted{Date: next})},
	}
}
