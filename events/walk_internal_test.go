package events

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/opencarte/publisher/events/natstest"
)

// A walk from a time after every record of a subject finds nothing and is no error: the server's
// answer that nothing matches is told apart from a batch that went unanswered, which is asked
// again and then is an incomplete read.
func TestWalkFromATimeAfterEveryRecordFindsNothing(t *testing.T) {
	nc := natstest.Connect(t, natstest.Start(t))
	s, err := Open(t.Context(), nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), "chez-lou", 0, "cmd-1", []Envelope{{Type: "t", Time: time.Now(), SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	found := 0
	err = s.walk(t.Context(), "events.chez-lou", jetstreamext.GetBatchStartTime(time.Now().Add(time.Hour)), true, 0,
		func(*jetstream.RawStreamMsg) (bool, error) { found++; return false, nil })
	if err != nil || found != 0 {
		t.Fatalf("walk from an hour ahead: found %d, error %v; want nothing and no error", found, err)
	}
}
