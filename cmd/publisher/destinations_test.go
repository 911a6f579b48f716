package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
)

// brokerEvent is a change event a broker's consumer read, its attributes from the headers (binary
// mode) or the body (structured mode).
type brokerEvent struct {
	ID, Source, Type, Subject, SpecVersion, Time string
	Data                                         events.Change
}

// brokerUnderTest is a broker as the end-to-end test of destinations drives it.
type brokerUnderTest struct {
	// fields are the fields of the registration of the destination name on the broker: its type,
	// and its own topic, exchange, subjects or table.
	fields func(name string) map[string]any
	// secret is a credential the registration holds, which no answer may show.
	secret string
	// received returns every event the destination name's consumer read so far.
	received func(t *testing.T, name string) []brokerEvent
	// stop and start take the broker down and up again, its data kept.
	stop, start func(t *testing.T)
}

// testDestinationsThroughServe registers two destinations on the broker, one with every
// establishment from their full state, one with a single establishment from now, and checks that
// every change reaches them, in revision order per establishment, as CloudEvents; while the
// broker is down and across a restart of the service, nothing is lost.
func testDestinationsThroughServe(t *testing.T, b brokerUnderTest) {
	dir := t.TempDir()
	public := func(c *Config) { c.PublicURL = "https://menus.example" }
	m := openMain(t, dir, "2026-11-22", public)
	slugs := []string{"dest-a", "dest-b", "dest-c"}
	importDemoAs(t, m, slugs...)
	all := m.addDestination(t, b.registration("all", nil, "all"), b.secret)
	only := m.addDestination(t, b.registration("only", []string{"dest-b"}, "now"), b.secret)

	rename := func(m *Main, slug string, n int) {
		t.Helper()
		demo, err := os.ReadFile("demo.json")
		if err != nil {
			t.Fatal(err)
		}
		doc := bytes.Replace(demo, []byte(`"slug": "chez-marcel"`), []byte(`"slug": "`+slug+`"`), 1)
		doc = bytes.Replace(doc, []byte(`"name": "Chez Marcel"`), fmt.Appendf(nil, `"name": "Chez Marcel %d"`, n), 1)
		if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slug, doc); r.status != http.StatusOK {
			t.Fatalf("change %s: %d %s", slug, r.status, r.body)
		}
	}
	rename(m, "dest-b", 1)
	rename(m, "dest-b", 2)
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/dest-c/api/disable", nil); r.status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	m.awaitDestination(t, b, "all", slugs)

	// The broker down: the destination fails, and says why.
	b.stop(t)
	rename(m, "dest-a", 3)
	rename(m, "dest-b", 3)
	eventually(t, "the destination failing", func() bool {
		st := m.destination(t, all, b.secret)
		return st.State == "failing" && st.LastError != "" && st.Failures > 0
	})
	// The service restarted while the broker is down, and changes meanwhile.
	m.Close()
	m = openMain(t, dir, "2026-11-22", public)
	rename(m, "dest-a", 4)
	b.start(t)
	m.awaitDestination(t, b, "all", slugs)
	m.awaitDestination(t, b, "only", []string{"dest-b"})
	eventually(t, "the destination active again", func() bool { return m.destination(t, all, b.secret).State == "active" })

	for _, name := range []string{"all", "only"} {
		checkEvents(t, name, b.received(t, name), "https://menus.example")
	}
	for _, e := range b.received(t, "only") {
		if e.Subject != "dest-b" {
			t.Errorf("the destination of dest-b alone received %s", e.Subject)
		}
	}
	if st := m.destination(t, only, b.secret); st.Published == 0 || st.LagRecords != 0 {
		t.Errorf("status of the filtered destination: %+v", st)
	}
}

// registration is the body registering the destination name, filtered to slugs unless nil,
// starting at start.
func (b brokerUnderTest) registration(name string, slugs []string, start string) string {
	reg := b.fields(name)
	reg["start"] = start
	if slugs != nil {
		reg["establishments"] = slugs
	}
	body, _ := json.Marshal(reg)
	return string(body)
}

// destinationStatus is the part of a destination's status the tests read.
type destinationStatus struct {
	ID         string  `json:"id"`
	State      string  `json:"state"`
	Published  uint64  `json:"published"`
	Failures   uint64  `json:"failures"`
	LastError  string  `json:"last_error"`
	LagRecords uint64  `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
}

// addDestination registers a destination and returns its id; the answer must not show secret.
func (m *Main) addDestination(t *testing.T, body, secret string) string {
	t.Helper()
	r := m.admin(t, http.MethodPost, "/admin/v1/destinations", []byte(body))
	if r.status != http.StatusCreated {
		t.Fatalf("register %s: %d %s", body, r.status, r.body)
	}
	if secret != "" && bytes.Contains(r.body, []byte(secret)) {
		t.Errorf("the registration's answer shows its credential: %s", r.body)
	}
	var st destinationStatus
	if err := json.Unmarshal(r.body, &st); err != nil || !strings.HasPrefix(st.ID, "dst_") {
		t.Fatalf("registration answered %s (%v), want its id", r.body, err)
	}
	return st.ID
}

// destination reads the status of the destination id; it must not show secret.
func (m *Main) destination(t *testing.T, id, secret string) destinationStatus {
	t.Helper()
	r := m.admin(t, http.MethodGet, "/admin/v1/destinations/"+id, nil)
	if r.status != http.StatusOK {
		t.Fatalf("destination %s: %d %s", id, r.status, r.body)
	}
	if secret != "" && bytes.Contains(r.body, []byte(secret)) {
		t.Errorf("the status shows the credential: %s", r.body)
	}
	var st destinationStatus
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// awaitDestination waits until the destination name received every slug's state the changes
// feed gives: its revision, and whether it is served.
func (m *Main) awaitDestination(t *testing.T, b brokerUnderTest, name string, slugs []string) {
	t.Helper()
	want := map[string]events.Change{}
	m.follow(t, "", 1000, want)
	var got map[string]events.Change
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = map[string]events.Change{}
		for _, e := range b.received(t, name) {
			if e.Data.Revision >= got[e.Subject].Revision {
				got[e.Subject] = e.Data
			}
		}
		done := true
		for _, slug := range slugs {
			w, g := want[slug], got[slug]
			done = done && g.Revision == w.Revision && g.Served == w.Served
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("destination %s: received %v, want the feed's %v", name, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var eventID = regexp.MustCompile(`^[a-z0-9-]+\.[0-9]+\.[suSU][0-9]+$`)

// checkEvents checks each event's attributes, and that each establishment's events, once
// duplicates are dropped by id, come in the order of its revisions.
func checkEvents(t *testing.T, name string, evs []brokerEvent, source string) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int64{}
	for _, e := range evs {
		if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil || e.SpecVersion != "1.0" || e.Type != "establishment.content_updated" ||
			e.Source != source || e.Subject != e.Data.Establishment || !eventID.MatchString(e.ID) {
			t.Errorf("%s: event %+v: want CloudEvents attributes, source %s", name, e, source)
		}
		if seen[e.ID] {
			continue // published again after a failure: the same event
		}
		seen[e.ID] = true
		if e.Data.Revision < last[e.Subject] {
			t.Errorf("%s: %s went back from revision %d to %d", name, e.Subject, last[e.Subject], e.Data.Revision)
		}
		last[e.Subject] = e.Data.Revision
	}
	if len(evs) == 0 {
		t.Errorf("%s: no event", name)
	}
}

// A registration the broker's client would refuse before connecting is refused when it is made:
// a 422 naming the field, without the credential, and nothing registered.
func TestDestinationRegistrationsReadAsTheirBrokersWill(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	const secret = "pw-7Qx"
	for _, c := range []struct{ body, field string }{
		{`{"type": "postgres", "dsn": "postgres://u:` + secret + `@db:99999/app", "table": "outbox"}`, "dsn"},
		{`{"type": "postgres", "dsn": "postgres://u:` + secret + `@db/app?sslmode=disable", "table": "outbox", "tls": {}}`, "tls"},
		{`{"type": "nats", "url": "nats://127.0.0.1:4222", "subject_prefix": "menus", "nkey_seed": "SU` + secret + `"}`, "nkey_seed"},
		{`{"type": "nats", "url": "nats://127.0.0.1:4222", "subject_prefix": "menus", "creds": "` + secret + `"}`, "creds"},
		{`{"type": "amqp", "url": "amqp://u:` + secret + `@rabbit:99999/", "exchange": "menus"}`, "url"},
		{`{"type": "amqp", "url": "amqp://u:` + secret + `@rabbit/?heartbeat=often", "exchange": "menus"}`, "url"},
	} {
		r := m.admin(t, http.MethodPost, "/admin/v1/destinations", []byte(c.body))
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), c.field+":") {
			t.Errorf("POST %s: got %d %s, want 422 naming %s", c.body, r.status, r.body, c.field)
		}
		if strings.Contains(string(r.body), secret) {
			t.Errorf("POST %s: the answer shows the credential: %s", c.body, r.body)
		}
	}
	if r := m.admin(t, http.MethodGet, "/admin/v1/destinations", nil); r.status != http.StatusOK || strings.Contains(string(r.body), "dst_") {
		t.Errorf("destinations after refusals: got %d %s, want none", r.status, r.body)
	}
}
