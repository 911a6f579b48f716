package telemetry

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
	"github.com/opencarte/publisher/readapi"
)

// TestMirrorLagSeesAMirrorBehind: a mirror that has not applied the bucket's last bundle write is
// found behind, and for longer and longer.
func TestMirrorLagSeesAMirrorBehind(t *testing.T) {
	_, lag := lagOfBucket(t, dockey.Key("chez-marcel")) // the mirror never runs: it stays behind
	eventually(t, "the mirror found behind", func() bool { return lag.Behind() > 0 })
	first := lag.Behind()
	eventually(t, "the lag growing", func() bool { return lag.Behind() > first })
}

// TestMirrorLagSeesAMirrorBehindAWriteWrittenAgain: the write after the mirror's last applied one
// is gone, its key written again since, and the mirror is still found behind.
func TestMirrorLagSeesAMirrorBehindAWriteWrittenAgain(t *testing.T) {
	_, lag := lagOfBucket(t, dockey.Key("chez-marcel"), dockey.Key("chez-marcel"))
	eventually(t, "the mirror found behind", func() bool { return lag.Behind() > 0 })
}

// TestMirrorLagEndsWhenEveryWriteIsApplied: a mirror behind is no longer once it runs, even when
// the bucket's last write is under a key that names no bundle.
func TestMirrorLagEndsWhenEveryWriteIsApplied(t *testing.T) {
	mirror, lag := lagOfBucket(t, dockey.Key("chez-marcel"), "other.key")
	eventually(t, "the mirror found behind before it runs", func() bool { return lag.Behind() > 0 })
	go mirror.Run(t.Context())
	eventually(t, "the mirror no longer behind once it runs", func() bool { return lag.Behind() == 0 })
}

// TestAStalledMirrorWatchesAgain: a mirror whose watch's consumer is gone (with its server, say)
// while its connection stays up applies nothing more; found behind and applying nothing, it is
// told so, watches again and applies what was written meanwhile, where the client would notice
// only after it missed the consumer's heartbeats (this test's deadline or later).
func TestAStalledMirrorWatchesAgain(t *testing.T) {
	var stalls atomic.Int32
	js, kv, mirror, _ := lagWith(t, func(m *readapi.Mirror) {
		stalls.Add(1)
		m.Rewatch()
	}, dockey.Key("chez-marcel"))
	go mirror.Run(t.Context())
	eventually(t, "the mirror caught up", func() bool { return mirror.Applied() == 1 })
	before := stalls.Load()

	stream, err := js.Stream(t.Context(), "KV_"+kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(t.Context())
	for name := range names.Name() {
		if err := stream.DeleteConsumer(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), dockey.Key("chez-marcel"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the write applied", func() bool { return mirror.Applied() == 2 })
	if stalls.Load() == before {
		t.Error("the write was applied without the mirror found stalled: its watch did not stall")
	}
}

// lagOfBucket writes keys, in order, to a new bucket of bundles on a NATS server of its own and
// returns a mirror of the bucket, not running, and its lag, running.
func lagOfBucket(t *testing.T, keys ...string) (*readapi.Mirror, *Lag) {
	t.Helper()
	_, _, mirror, lag := lagWith(t, nil, keys...)
	return mirror, lag
}

// lagWith is lagOfBucket with a lag calling stalled, if not nil, with the mirror, and the
// bucket and its JetStream.
func lagWith(t *testing.T, stalled func(*readapi.Mirror), keys ...string) (jetstream.JetStream, jetstream.KeyValue, *readapi.Mirror, *Lag) {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := runner.OpenBucket(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		if _, err := kv.Put(t.Context(), key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	mirror, err := readapi.NewMirror(kv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	lag, err := NewLag(t.Context(), js, mirror)
	if err != nil {
		t.Fatal(err)
	}
	if stalled != nil {
		lag.Stalled = func() { stalled(mirror) }
	}
	go lag.Run(t.Context())
	return js, kv, mirror, lag
}

// eventually polls f until it holds, failing tb after 10s.
func eventually(tb testing.TB, what string, f func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
