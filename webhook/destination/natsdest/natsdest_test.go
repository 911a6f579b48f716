package natsdest_test

import (
	"encoding/json"
	"fmt"
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

func TestBinaryEventsOnTheSlugsSubjects(t *testing.T) {
	t.Parallel()
	_, url := startServer(t, "pw-1")
	nc, err := nats.Connect(url, nats.UserInfo("menus", "pw-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("menus.changes.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	sink, err := natsdest.Open(t.Context(), spec(url, destination.ModeBinary, false), destination.Secrets{Password: "pw-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	evs := append(brokertest.Events("chez-marcel", 3, 4), brokertest.Events("other", 1)...)
	if err := sink.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Subject != "menus.changes."+e.Subject {
			t.Errorf("subject %s, want menus.changes.%s", msg.Subject, e.Subject)
		}
		for _, a := range e.Attributes() {
			if got := msg.Header.Get("ce-" + a.Name); got != a.Value {
				t.Errorf("ce-%s = %q, want %q", a.Name, got, a.Value)
			}
		}
		var data events.Change
		if err := json.Unmarshal(msg.Data, &data); err != nil || data.Revision != e.Data.Revision || data.Establishment != e.Subject {
			t.Errorf("data %s: %v", msg.Data, err)
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
	sink, err := natsdest.Open(t.Context(), spec(url, destination.ModeStructured, true), destination.Secrets{Password: "pw-2"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
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

func TestServerAwayThenBack(t *testing.T) {
	t.Parallel()
	opts := natstest.Options(t.TempDir())
	opts.Port = natstest.FreePort(t)
	opts.Users = []*server.User{{Username: "menus", Password: "pw-3"}}
	s := natstest.StartWith(t, opts)
	url := fmt.Sprintf("nats://127.0.0.1:%d", opts.Port)
	sink, err := natsdest.Open(t.Context(), spec(url, destination.ModeBinary, true), destination.Secrets{Password: "pw-3"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	s.Shutdown()
	s.WaitForShutdown()
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err == nil {
		t.Fatal("Publish with the server away: no error")
	}
	s = natstest.StartWith(t, opts)
	nc, err := nats.Connect(url, nats.UserInfo("menus", "pw-3"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "MENUS", Subjects: []string{"menus.changes.>"}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Publish once the server is back: %v", err)
		}
	}
}

func TestRefusedCredentialsAreNotShown(t *testing.T) {
	t.Parallel()
	_, url := startServer(t, "right-pw")
	for _, sec := range []struct {
		spec destination.Spec
		sec  destination.Secrets
		word string
	}{
		{spec(url, destination.ModeBinary, false), destination.Secrets{Password: "wrong-pw-4"}, "wrong-pw-4"},
		{destination.Spec{Type: destination.TypeNATS, URL: url, SubjectPrefix: "p"}, destination.Secrets{Token: "token-secret-5"}, "token-secret-5"},
		{destination.Spec{Type: destination.TypeNATS, URL: url, SubjectPrefix: "p"}, destination.Secrets{NKeySeed: "SUnot-a-seed-6"}, "SUnot-a-seed-6"},
		{destination.Spec{Type: destination.TypeNATS, URL: url, SubjectPrefix: "p"}, destination.Secrets{Creds: "garbage-creds-7"}, "garbage-creds-7"},
	} {
		sink, err := natsdest.Open(t.Context(), sec.spec, sec.sec)
		if err == nil {
			sink.Close()
			t.Errorf("Open with %s: no error", sec.word)
			continue
		}
		if strings.Contains(err.Error(), sec.word) {
			t.Errorf("the error shows the credential: %v", err)
		}
	}
}
