package projections

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// testKey is the API key of every fixture that enables the API.
var testKey = domain.NewAPIKey([32]byte{1, 2, 3})

// eventTime is the decision time written in test envelopes; rendering never looks at it.
var eventTime = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

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
		dir := filepath.Join("testdata", name)
		snapshot := filepath.Join(dir, "snapshot.json")
		if name == "demo" {
			snapshot = "../cmd/publisher/demo.json"
		}
		out = append(out, namedFixture{name: name, e: fixture(tb, snapshot, readToday(tb, dir))})
	}
	return out
}
