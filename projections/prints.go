package projections

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
)

// printHeader is the header of a stored bundle that holds the fingerprint of its summary, in
// hexadecimal: what summarizeStored(value).fingerprint() gives.
const printHeader = "Summary-Print"

// Bundles is a bucket of bundles as OpenBucket and OpenGeneration open it: a jetstream.KeyValue
// that the projector also writes with the fingerprint of each bundle's summary in a header, and
// whose fingerprints it reads without the bundles. A replay of the whole log compares what it
// replays with every stored bundle by these fingerprints: reading the headers of a hundred
// thousand bundles costs a small part of reading the gigabytes they hold.
type Bundles struct {
	jetstream.KeyValue
	js jetstream.JetStream
}

// NewBundles returns kv, a bucket of bundles opened through js, as a *Bundles.
func NewBundles(js jetstream.JetStream, kv jetstream.KeyValue) *Bundles {
	return &Bundles{KeyValue: kv, js: js}
}

// printedBucket is a Bucket storing and reading fingerprints, as Bundles does.
type printedBucket interface {
	Bucket
	putPrinted(ctx context.Context, key string, value []byte, print uint64) (uint64, error)
	prints(ctx context.Context, fn func(key string, print uint64, known bool)) error
}

// subject returns the subject of key in the bucket's stream.
func (b *Bundles) subject(key string) string { return "$KV." + b.Bucket() + "." + key }

// putPrinted stores value under key, as Put does, with print in its header.
func (b *Bundles) putPrinted(ctx context.Context, key string, value []byte, print uint64) (uint64, error) {
	msg := nats.NewMsg(b.subject(key))
	msg.Data = value
	msg.Header.Set(printHeader, strconv.FormatUint(print, 16))
	ack, err := b.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// prints calls fn with the key of every bundle stored when it starts, in the bucket's order, and
// the fingerprint its header holds; known is false for a bundle stored without one, or with one
// that cannot be read. It reads the headers alone.
func (b *Bundles) prints(ctx context.Context, fn func(key string, print uint64, known bool)) error {
	stream, err := b.js.Stream(ctx, "KV_"+b.Bucket())
	if err != nil {
		return fmt.Errorf("read the fingerprints of the stored bundles: %w", err)
	}
	prefix := b.subject("")
	err = events.ReadStream(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + dockey.Watch},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	}, func(msg jetstream.Msg, _ *jetstream.MsgMetadata) error {
		h := msg.Headers()
		if op := h.Get("KV-Operation"); op != "" {
			return nil // deleted or purged
		}
		print, err := strconv.ParseUint(h.Get(printHeader), 16, 64)
		fn(strings.TrimPrefix(msg.Subject(), prefix), print, err == nil && print != 0)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the fingerprints of the stored bundles: %w", err)
	}
	return nil
}
