package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
)

// A NATS destination on another NATS server, with its own user, publishing into a stream there:
// the end-to-end checks of testDestinationsThroughServe.
func TestNATSDestinationThroughServe(t *testing.T) {
	opts := natstest.Options(t.TempDir())
	opts.Port = natstest.FreePort(t)
	opts.Users = []*server.User{{Username: "menus", Password: "nats-secret-pw"}}
	var srv *server.Server
	start := func(t *testing.T) { srv = natstest.StartWith(t, opts) }
	start(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", opts.Port)
	consumer, err := nats.Connect(url, nats.UserInfo("menus", "nats-secret-pw"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	js, err := jetstream.New(consumer)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"all", "only"} {
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: strings.ToUpper(name), Subjects: []string{"menus." + name + ".>"}}); err != nil {
			t.Fatal(err)
		}
	}
	testDestinationsThroughServe(t, brokerUnderTest{
		fields: func(name string) map[string]any {
			return map[string]any{
				"type": "nats", "url": url, "subject_prefix": "menus." + name, "jetstream": true,
				"user": "menus", "password": "nats-secret-pw",
			}
		},
		secret: "nats-secret-pw",
		received: func(t *testing.T, name string) []brokerEvent {
			return streamEvents(t, js, strings.ToUpper(name), "menus."+name+".")
		},
		stop: func(*testing.T) {
			srv.Shutdown()
			srv.WaitForShutdown()
		},
		start: start,
	})
}

// streamEvents reads every message of the stream, each a change event in the binary mode of
// the CloudEvents NATS binding, on the subject prefix + slug.
func streamEvents(t *testing.T, js jetstream.JetStream, stream, prefix string) []brokerEvent {
	t.Helper()
	s, err := js.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []brokerEvent
	for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
		msg, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		e := brokerEvent{
			ID: msg.Header.Get("ce-id"), Source: msg.Header.Get("ce-source"), Type: msg.Header.Get("ce-type"),
			Subject: msg.Header.Get("ce-subject"), SpecVersion: msg.Header.Get("ce-specversion"), Time: msg.Header.Get("ce-time"),
		}
		if err := json.Unmarshal(msg.Data, &e.Data); err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if msg.Subject != prefix+e.Subject {
			t.Errorf("event of %s on subject %s", e.Subject, msg.Subject)
		}
		out = append(out, e)
	}
	return out
}
