package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// testKey is the API key of every fixture that enables the API.
var testKey = domain.NewAPIKey([32]byte{1, 2, 3})

// eventTime is the decision time written in test envelopes; rendering never looks at it, the
// window of re-announcements measures it against testNow.
var eventTime = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// testNow is the projectors' clock in tests, an hour after eventTime: the changes of the test
// logs are recent, whatever the day the tests run.
func testNow() time.Time { return eventTime.Add(time.Hour) }

// readSnapshot parses the import document at path.
func readSnapshot(tb testing.TB, path string) domain.EstablishmentInput {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("open snapshot: %v", err)
	}
	defer f.Close()
	s, err := domain.ParseInput(f)
	if err != nil {
		tb.Fatalf("parse snapshot %s: %v", path, err)
	}
	return s
}

// readToday reads the date in the file today of dir.
func readToday(tb testing.TB, dir string) domain.LocalDate {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "today"))
	if err != nil {
		tb.Fatalf("read today: %v", err)
	}
	d, err := domain.ParseLocalDate(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatalf("parse today: %v", err)
	}
	return d
}

// importEvents returns the events that import s into e, the empty aggregate or an existing one.
func importEvents(tb testing.TB, e *domain.Establishment, s domain.EstablishmentInput) []domain.Event {
	tb.Helper()
	res, err := e.Import(s, testKey)
	if err != nil {
		tb.Fatalf("import %s: %v", s.Slug, err)
	}
	return res.Events
}

// fixture returns the establishment of the snapshot at path on date today, built the way the
// projector builds it: every event goes through its wire encoding.
func fixture(tb testing.TB, path string, today domain.LocalDate) *domain.Establishment {
	tb.Helper()
	s := readSnapshot(tb, path)
	e := domain.New(domain.Slug(s.Slug))
	evs := importEvents(tb, e, s)
	evs = append(evs, domain.DayStarted{Date: today})
	for _, ev := range decodeAll(tb, envelopes(tb, evs...)) {
		e.Apply(ev)
	}
	return e
}

// envelopes encodes domain events as the event log stores them.
func envelopes(tb testing.TB, evs ...domain.Event) []events.Envelope {
	tb.Helper()
	out := make([]events.Envelope, 0, len(evs))
	for _, ev := range evs {
		payload, err := domain.EncodeEvent(ev)
		if err != nil {
			tb.Fatalf("encode event: %v", err)
		}
		out = append(out, events.Envelope{
			Type:          ev.EventType(),
			Time:          eventTime,
			SchemaVersion: domain.SchemaVersion,
			Payload:       payload,
		})
	}
	return out
}

func decodeAll(tb testing.TB, envs []events.Envelope) []domain.Event {
	tb.Helper()
	out := make([]domain.Event, 0, len(envs))
	for _, env := range envs {
		ev, err := domain.DecodeEvent(env.Type, env.SchemaVersion, env.Payload)
		if err != nil {
			tb.Fatalf("decode %s: %v", env.Type, err)
		}
		out = append(out, ev)
	}
	return out
}

// namedFixture is one of the establishments of the test fixtures, as of its fixture's day.
type namedFixture struct {
	name string
	e    *domain.Establishment
}

// fixtures returns the demo establishment and those of testdata/dated and testdata/uploaded-only,
// each on the day its fixture names.
func fixtures(tb testing.TB) []namedFixture {
	tb.Helper()
	var out []namedFixture
	for _, name := range []string{"demo", "dated", "uploaded-only"} {
		dir := filepath.Join("..", "testdata", name)
		snapshot := filepath.Join(dir, "snapshot.json")
		if name == "demo" {
			snapshot = "../../cmd/publisher/demo.json"
		}
		out = append(out, namedFixture{name: name, e: fixture(tb, snapshot, readToday(tb, dir))})
	}
	return out
}

func date(tb testing.TB, s string) domain.LocalDate {
	tb.Helper()
	d, err := domain.ParseLocalDate(s)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// renderedDraft returns the bundle of e, a draft, with every document rendered at revision, as
// a renderer that rendered drafts stored it: no document depends on the status.
func renderedDraft(e *domain.Establishment, revision int64) dockey.Bundle {
	active := *e
	active.Status = domain.StatusActive
	b := projections.RenderWith(&active, "", nil).Bundle(revision)
	b.Status = dockey.StatusDraft
	return b
}

// storedSummaryOf returns the summary of b as the projector reads it back from the bucket.
func storedSummaryOf(tb testing.TB, b *dockey.Bundle) *projections.BundleSummary {
	tb.Helper()
	value, err := dockey.EncodeBundle(b)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := projections.SummarizeStored(value)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// rng parses "mardi 12:00 mardi 14:30"; the closing day and time may be "-" for null.
func rng(tb testing.TB, openDay, openTime, closeDay, closeTime string) domain.OpeningRange {
	tb.Helper()
	var r domain.OpeningRange
	var err error
	if r.OpenDay, err = domain.ParseWeekday(openDay); err != nil {
		tb.Fatal(err)
	}
	if r.OpenTime, err = domain.ParseClockTime(openTime); err != nil {
		tb.Fatal(err)
	}
	if closeDay != "-" {
		d, err := domain.ParseWeekday(closeDay)
		if err != nil {
			tb.Fatal(err)
		}
		r.CloseDay = &d
	}
	if closeTime != "-" {
		c, err := domain.ParseClockTime(closeTime)
		if err != nil {
			tb.Fatal(err)
		}
		r.CloseTime = &c
	}
	return r
}
