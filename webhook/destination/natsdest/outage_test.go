package natsdest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// The server stops between two pages and starts again on the same port with the same store:
// the sinks, core and JetStream, fail while it is away, saying so, and publish once it is back;
// the stream then holds both pages, once each, in order.
func TestServerAwayThenBackLosesNothing(t *testing.T) {
	t.Parallel()
	opts := natstest.Options(t.TempDir())
	opts.Port = natstest.FreePort(t)
	opts.Users = []*server.User{{Username: "menus", Password: "pw-3"}}
	s := natstest.StartWith(t, opts)
	url := fmt.Sprintf("nats://127.0.0.1:%d", opts.Port)
	stream := createStream(t, url, "pw-3")
	sec := destination.Secrets{Password: "pw-3"}
	coreSpec := spec(url, destination.ModeBinary, false)
	coreSpec.SubjectPrefix = "menus.core" // outside the stream
	js, core := open(t, spec(url, destination.ModeBinary, true), sec), open(t, coreSpec, sec)
	first, second := brokertest.Events("a", 1, 2), brokertest.Events("b", 1, 2)
	if err := js.Publish(t.Context(), first); err != nil {
		t.Fatal(err)
	}

	s.Shutdown()
	s.WaitForShutdown()
	for _, sink := range []destination.Sink{js, core} {
		if err := sink.Publish(t.Context(), second); err == nil || !strings.Contains(err.Error(), "nats: not connected") {
			t.Errorf("Publish with the server away: %v, want it said", err)
		}
	}

	natstest.StartWith(t, opts)
	for _, sink := range []destination.Sink{js, core} {
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := sink.Publish(t.Context(), second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Publish once the server is back: %v", err)
			}
		}
	}
	assertStream(t, stream, append(first, second...))
}

// createStream creates the stream of the subjects menus.changes.> and returns it.
func createStream(t *testing.T, url, password string) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo("menus", password), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "MENUS", Subjects: []string{"menus.changes.>"}})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}
