package natsdest_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook/destination"
)

// A source URL with a space, a percent sign, a double quote and a non-ASCII letter travels
// percent-encoded in ce-source, as the binding asks, and decodes to itself; the other
// attributes are unchanged.
func TestHeaderValuesPercentEncoded(t *testing.T) {
	t.Parallel()
	_, u := startServer(t, "pw-9")
	sub := subscribe(t, u, "menus.changes", nats.UserInfo("menus", "pw-9"))
	sink := open(t, spec(u, destination.ModeBinary, false), destination.Secrets{Password: "pw-9"})
	source := `https://menus.example/caf%C3%A9 "é"`
	ev := destination.NewEvent(source, events.Change{Establishment: "chez-marcel", Revision: 4, Served: true, Seq: 9, At: time.Now()})
	if err := sink.Publish(t.Context(), []destination.Event{ev}); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const want = `https://menus.example/caf%25C3%25A9%20%22%C3%A9%22`
	if got := msg.Header.Get("ce-source"); got != want {
		t.Errorf("ce-source = %q, want %q", got, want)
	} else if decoded, err := url.PathUnescape(got); err != nil || decoded != source {
		t.Errorf("ce-source decodes to %q (%v), want %q", decoded, err, source)
	}
	for _, a := range ev.Attributes() {
		if a.Name != "source" && msg.Header.Get("ce-"+a.Name) != a.Value {
			t.Errorf("ce-%s = %q, want %q", a.Name, msg.Header.Get("ce-"+a.Name), a.Value)
		}
	}
}
