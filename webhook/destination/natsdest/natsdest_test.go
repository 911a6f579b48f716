package natsdest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
	"github.com/opencarte/publisher/webhook/destination/natsdest"
)

// server runs a NATS server whose user "menus" has the password given, with JetStream.
func startServer(t *testing.T, password string) (*server.Server, string) {
	t.Helper()
	opts := natstest.Options(t.TempDir())
	opts.Users = []*server.User{{Username: "menus", Password: password}}
	s := natstest.StartWith(t, opts)
	return s, s.ClientURL()
}

func spec(url string, mode string, js bool) destination.Spec {
	return destination.Spec{Type: destination.TypeNATS, URL: url, SubjectPrefix: "menus.changes", User: "menus", ContentMode: mode, JetStream: js}
}

// open opens the destination's sink and closes it when the test ends.
func open(t *testing.T, sp destination.Spec, sec destination.Secrets) destination.Sink {
	t.Helper()
	sink, err := natsdest.Open(t.Context(), sp, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink
}

// subscribe follows the subjects under prefix as a consumer of the other NATS would.
func subscribe(t *testing.T, url, prefix string, opts ...nats.Option) *nats.Subscription {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(prefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

func TestBinaryEventsInOrderOnTheSlugsSubjects(t *testing.T) {
	t.Parallel()
	_, url := startServer(t, "pw-1")
	sub := subscribe(t, url, "menus.changes", nats.UserInfo("menus", "pw-1"))
	sink := open(t, spec(url, destination.ModeBinary, false), destination.Secrets{Password: "pw-1"})
	evs := brokertest.Interleaved(20, "chez-marcel", "la-mer", "other")
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	byID := map[string]destination.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	last := map[string]int64{}
	for range evs {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		slug := msg.Header.Get("ce-subject")
		if msg.Subject != "menus.changes."+slug {
			t.Errorf("event of %q on subject %s", slug, msg.Subject)
		}
		var data events.Change
		if err := json.Unmarshal(msg.Data, &data); err != nil || data.Establishment != slug {
			t.Fatalf("data %s of %q: %v", msg.Data, slug, err)
		}
		if data.Revision != last[slug]+1 {
			t.Errorf("%s: revision %d after %d", slug, data.Revision, last[slug])
		}
		last[slug] = data.Revision
		want, ok := byID[msg.Header.Get("ce-id")]
		if !ok || want.Subject != slug || want.Data.Revision != data.Revision {
			t.Fatalf("message of id %q: %s", msg.Header.Get("ce-id"), msg.Data)
		}
		for _, a := range want.Attributes() {
			if got := msg.Header.Get("ce-" + a.Name); got != a.Value {
				t.Errorf("ce-%s = %q, want %q", a.Name, got, a.Value)
			}
		}
	}
}

func TestStructuredEventsWithAToken(t *testing.T) {
	t.Parallel()
	opts := natstest.Options(t.TempDir())
	opts.Authorization = "token-of-menus"
	s := natstest.StartWith(t, opts)
	sub := subscribe(t, s.ClientURL(), "menus.changes", nats.Token("token-of-menus"))
	sp := spec(s.ClientURL(), destination.ModeStructured, false)
	sp.User = ""
	sink := open(t, sp, destination.Secrets{Token: "token-of-menus"})
	evs := brokertest.Events("chez-marcel", 7, 8)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Subject != "menus.changes.chez-marcel" || msg.Header.Get("content-type") != destination.StructuredContentType ||
			msg.Header.Get("ce-id") != "" {
			t.Errorf("structured message on %s with headers %v", msg.Subject, msg.Header)
		}
		if string(msg.Data) != string(e.StructuredJSON()) {
			t.Errorf("body %s, want %s", msg.Data, e.StructuredJSON())
		}
	}
}

func TestStructuredEventsIntoAStreamOnce(t *testing.T) {
	t.Parallel()
	_, url := startServer(t, "pw-2")
	nc, err := nats.Connect(url, nats.UserInfo("menus", "pw-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	sink := open(t, spec(url, destination.ModeStructured, true), destination.Secrets{Password: "pw-2"})
	evs := brokertest.Events("chez-marcel", 1, 2, 3)
	err = sink.Publish(t.Context(), evs)
	if err == nil || !strings.Contains(err.Error(), "no stream holds menus.changes.chez-marcel") {
		t.Errorf("Publish without a stream: %v, want it said", err)
	}
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "MENUS", Subjects: []string{"menus.changes.>"}})
	if err != nil {
		t.Fatal(err)
	}
	// Published twice, as after a failure: the stream keeps each event once.
	for range 2 {
		if err := sink.Publish(t.Context(), evs); err != nil {
			t.Fatal(err)
		}
	}
	info, err := stream.Info(t.Context())
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("stream holds %d messages (%v), want 3", info.State.Msgs, err)
	}
	msg, err := stream.GetMsg(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		SpecVersion, ID, Type, Subject string
		Data                           events.Change
	}
	if err := json.Unmarshal(msg.Data, &ev); err != nil || ev.SpecVersion != "1.0" || ev.ID != evs[2].ID || ev.Data.Revision != 3 ||
		msg.Header.Get("content-type") != destination.StructuredContentType {
		t.Errorf("structured event %s (%v), headers %v", msg.Data, err, msg.Header)
	}
}

// A page larger than the acknowledgements awaited at once is stored whole, in order.
func TestAPageLargerThanThePendingAcknowledgements(t *testing.T) {
	t.Parallel()
	_, url := startServer(t, "pw-8")
	nc, err := nats.Connect(url, nats.UserInfo("menus", "pw-8"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "MENUS", Subjects: []string{"menus.changes.>"}})
	if err != nil {
		t.Fatal(err)
	}
	sink := open(t, spec(url, destination.ModeBinary, true), destination.Secrets{Password: "pw-8"})
	evs := brokertest.Interleaved(1500, "chez-marcel", "la-mer")
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	assertStream(t, stream, evs)
}

// assertStream fails unless the stream holds the events, once each, in their order.
func assertStream(t *testing.T, stream jetstream.Stream, evs []destination.Event) {
	t.Helper()
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(evs)) {
		t.Fatalf("stream holds %d messages, want %d", info.State.Msgs, len(evs))
	}
	for i, e := range evs {
		msg, err := stream.GetMsg(t.Context(), info.State.FirstSeq+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := msg.Header.Get("ce-id"); got != e.ID {
			t.Fatalf("message %d is %s, want %s", i, got, e.ID)
		}
	}
}
