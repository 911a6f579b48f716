package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/readapi"
)

// lagCheckEvery is how often a read node compares its mirror with the documents bucket.
const lagCheckEvery = time.Second

// mirrorLag follows how long the read API's mirror has been behind the documents bucket: every
// second it reads the revision of the bucket's last bundle write (one NATS request, never on a
// read's path) and compares it with what the mirror applied.
type mirrorLag struct {
	mirror *readapi.Mirror
	stream jetstream.Stream // the bucket's stream
	since  atomic.Int64     // Unix ns since which the mirror is behind; 0 when it is not
}

func newMirrorLag(ctx context.Context, js jetstream.JetStream, mirror *readapi.Mirror) (*mirrorLag, error) {
	stream, err := js.Stream(ctx, "KV_"+dockey.Bucket)
	if err != nil {
		return nil, err
	}
	return &mirrorLag{mirror: mirror, stream: stream}, nil
}

// behind says how long the mirror has been behind the bucket, 0 when it is not, or when NATS
// cannot say (the node then serves what it holds, as it would anyway).
func (l *mirrorLag) behind() time.Duration {
	since := l.since.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

func (l *mirrorLag) run(ctx context.Context) error {
	t := time.NewTicker(lagCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, lagCheckEvery)
		msg, err := l.stream.GetLastMsgForSubject(rctx, "$KV."+dockey.Bucket+"."+dockey.Watch)
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			l.since.Store(0) // nothing stored: nothing to be behind
		case err != nil:
			// Unknown: the last state stands.
		case l.mirror.Applied() >= msg.Sequence:
			l.since.Store(0)
		default:
			l.since.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
}
