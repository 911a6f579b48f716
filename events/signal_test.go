package events_test

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

var signalTime = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func validSignal() events.Signal {
	return events.Signal{
		Establishment: "chez-marcel",
		Revision:      7,
		Resources:     []string{"hours", "menus", "menus/plat-du-jour"},
		Time:          signalTime,
	}
}

func TestSignalValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*events.Signal)
		ok     bool
	}{
		{"valid", func(*events.Signal) {}, true},
		{"removed menu type", func(s *events.Signal) { s.Resources = []string{"menus", "menus/ancienne-carte"} }, true},
		{"empty slug", func(s *events.Signal) { s.Establishment = "" }, false},
		{"slug with dot", func(s *events.Signal) { s.Establishment = "a.b" }, false},
		{"slug with wildcard", func(s *events.Signal) { s.Establishment = "a*" }, false},
		{"zero revision", func(s *events.Signal) { s.Revision = 0 }, false},
		{"negative revision", func(s *events.Signal) { s.Revision = -1 }, false},
		{"no resources", func(s *events.Signal) { s.Resources = nil }, false},
		{"empty resource", func(s *events.Signal) { s.Resources = []string{""} }, false},
		{"resource with space", func(s *events.Signal) { s.Resources = []string{"menus/a b"} }, false},
		{"resource too long", func(s *events.Signal) { s.Resources = []string{strings.Repeat("a", 257)} }, false},
		{"too many resources", func(s *events.Signal) { s.Resources = make([]string, 1025) }, false},
		{"unserved content change", func(s *events.Signal) { s.Unserved = true }, true},
		{"unserved transition", func(s *events.Signal) { s.Unserved, s.Transition = true, events.TransitionUnserved }, true},
		{"served transition", func(s *events.Signal) { s.Transition = events.TransitionServed }, true},
		{"unserved transition while served", func(s *events.Signal) { s.Transition = events.TransitionUnserved }, false},
		{"served transition while unserved", func(s *events.Signal) { s.Unserved, s.Transition = true, events.TransitionServed }, false},
		{"unknown transition", func(s *events.Signal) { s.Transition = "gone" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validSignal()
			tt.change(&s)
			err := s.Validate()
			if got := err == nil; got != tt.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, events.ErrInvalidSignal) {
				t.Errorf("got %v, want it to match ErrInvalidSignal", err)
			}
		})
	}
}

func TestSignalRoundTrip(t *testing.T) {
	t.Parallel()
	s := validSignal()
	data, err := events.EncodeSignal(s)
	if err != nil {
		t.Fatalf("EncodeSignal: %v", err)
	}
	want := `{"establishment":"chez-marcel","content_revision":7,"resources":["hours","menus","menus/plat-du-jour"],"time":"2026-03-14T09:30:00Z"}`
	if string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
	got, err := events.DecodeSignal(data)
	if err != nil {
		t.Fatalf("DecodeSignal: %v", err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := events.DecodeSignal([]byte(`{"establishment":"x","content_revision":0,"resources":["hours"]}`)); !errors.Is(err, events.ErrInvalidSignal) {
		t.Errorf("got %v, want ErrInvalidSignal for revision 0", err)
	}
	if _, err := events.DecodeSignal([]byte(`not json`)); !errors.Is(err, events.ErrInvalidSignal) {
		t.Errorf("got %v, want ErrInvalidSignal for bad json", err)
	}
}

// openSignals opens the signals stream on a server of the test's own.
func openSignals(tb testing.TB) (*events.Signals, *nats.Conn) {
	tb.Helper()
	nc := natstest.Connect(tb, natstest.Start(tb))
	sigs, err := events.OpenSignals(tb.Context(), nc, 1)
	if err != nil {
		tb.Fatalf("OpenSignals: %v", err)
	}
	return sigs, nc
}

func TestSignalPublishIsIdempotentPerRevision(t *testing.T) {
	t.Parallel()
	sigs, nc := openSignals(t)
	ctx := t.Context()
	if _, err := events.OpenSignals(ctx, nc, 1); err != nil {
		t.Fatalf("OpenSignals again: %v", err)
	}
	s := validSignal()
	for range 3 {
		if err := sigs.Publish(ctx, s); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	next := s
	next.Revision++
	if err := sigs.Publish(ctx, next); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := sigs.Publish(ctx, events.Signal{Establishment: "a.b", Revision: 1, Resources: []string{"hours"}}); !errors.Is(err, events.ErrInvalidSignal) {
		t.Errorf("got %v, want ErrInvalidSignal", err)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, events.SignalStreamName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if got := info.State.Msgs; got != 2 {
		t.Errorf("got %d stored signals, want 2 (one per revision)", got)
	}
	subject, _ := events.SignalSubject(s.Establishment)
	msg, err := stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("last signal: %v", err)
	}
	got, err := events.DecodeSignal(msg.Data)
	if err != nil {
		t.Fatalf("DecodeSignal: %v", err)
	}
	if last, err := sigs.Last(ctx, s.Establishment); err != nil || last.Revision != next.Revision {
		t.Errorf("Last(%s): got %+v, %v, want revision %d", s.Establishment, last, err, next.Revision)
	}
	if last, err := sigs.Last(ctx, "never-changed"); err != nil || last.Revision != 0 {
		t.Errorf("Last of an establishment without signals: got %+v, %v, want revision 0", last, err)
	}
	if _, err := sigs.Last(ctx, "a.b"); !errors.Is(err, events.ErrInvalidSlug) {
		t.Errorf("Last(a.b): got %v, want ErrInvalidSlug", err)
	}
	if diff := cmp.Diff(next, got); diff != "" {
		t.Errorf("stored signal (-want +got):\n%s", diff)
	}
}

func FuzzDecodeSignal(f *testing.F) {
	f.Add([]byte(`{"establishment":"chez-marcel","content_revision":7,"resources":["hours"],"time":"2026-03-14T09:30:00Z"}`))
	f.Add([]byte(`{"establishment":"a.b","content_revision":7,"resources":["hours"]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := events.DecodeSignal(data)
		if err != nil {
			return
		}
		again, err := events.EncodeSignal(s)
		if err != nil {
			t.Fatalf("accepted signal does not encode: %v", err)
		}
		back, err := events.DecodeSignal(again)
		if err != nil {
			t.Fatalf("re-encoded signal does not decode: %v", err)
		}
		if diff := cmp.Diff(s, back, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// Lasts tells, in one read, what Last tells of each establishment with a signal: its last one, a
// zero signal for a last signal that cannot be read, nothing from an empty stream; and it leaves
// no consumer behind.
func TestLastsInOneRead(t *testing.T) {
	t.Parallel()
	sigs, nc := openSignals(t)
	ctx := t.Context()
	all := func() map[string]int64 {
		got := map[string]int64{}
		if err := sigs.Lasts(ctx, func(s events.Signal) { got[s.Establishment] = s.Revision }); err != nil {
			t.Fatalf("Lasts: %v", err)
		}
		return got
	}
	if got := all(); len(got) != 0 {
		t.Errorf("an empty stream: got %v", got)
	}
	for i, slug := range []string{"alpha", "beta", "gamma", "beta", "alpha", "alpha"} {
		s := validSignal()
		s.Establishment, s.Revision = slug, int64(10+i)
		if err := sigs.Publish(ctx, s); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "signals.gamma", []byte("not a signal")); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"alpha": 15, "beta": 13, "gamma": 0}
	if got := all(); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// The read leaves no consumer behind.
	stream, err := js.Stream(ctx, events.SignalStreamName)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := stream.Info(ctx); err != nil || info.State.Consumers != 0 {
		t.Errorf("consumers after the read: %+v, %v; want none", info.State, err)
	}
	for slug, rev := range want {
		if slug == "gamma" {
			continue // Last fails on it: its last signal cannot be read
		}
		if one, err := sigs.Last(ctx, slug); err != nil || one.Revision != rev {
			t.Errorf("Last(%s): %+v, %v; Lasts says %d", slug, one, err, rev)
		}
	}
}
