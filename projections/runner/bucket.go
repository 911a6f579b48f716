package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// MaxBundleSize is the largest encoded bundle, in bytes, the bucket accepts. The NATS server's
// max_payload must be at least as large.
const MaxBundleSize = 8 << 20

// Bundles is a bucket of bundles as the projector writes and reads it: a jetstream.KeyValue
// whose bundles it also stores with the fingerprint of each one's summary in a header, and whose
// fingerprints it reads without the bundles (prints.go). A replay of the whole log compares what
// it replays with every stored bundle by these fingerprints: reading the headers of a hundred
// thousand bundles costs a small part of reading the gigabytes they hold.
//
// The header is written to the bucket's own subjects, as Put writes without a JetStream domain.
// Through a domain or another API prefix, Bundles stores as Put does, without it, and a bucket
// that mirrors or sources another is read whole: no fingerprint is trusted there.
type Bundles struct {
	jetstream.KeyValue
	js       jetstream.JetStream
	printing bool // js reaches the bucket's subjects as they are
}

// NewBundles returns kv, a bucket of bundles opened through js, as a *Bundles.
func NewBundles(js jetstream.JetStream, kv jetstream.KeyValue) *Bundles {
	o := js.Options()
	return &Bundles{KeyValue: kv, js: js,
		printing: o.Domain == "" && (o.APIPrefix == "" || o.APIPrefix == jetstream.DefaultAPIPrefix)}
}

// OpenBucket creates the bucket dockey.Bucket, or updates it to this configuration: one value
// per key, file storage, values up to MaxBundleSize, replicas copies (at least 1).
func OpenBucket(ctx context.Context, js jetstream.JetStream, replicas int) (*Bundles, error) {
	kv, err := openBucket(ctx, js, dockey.Bucket, "Rendered documents and access state, one bundle per establishment.", replicas)
	if err != nil {
		return nil, err
	}
	return NewBundles(js, kv), nil
}

// openBucket creates the bucket name, or updates it to this configuration: one value per key,
// file storage, values up to MaxBundleSize, replicas copies (at least 1).
func openBucket(ctx context.Context, js jetstream.JetStream, name, description string, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       name,
		Description:  description,
		History:      1,
		Storage:      jetstream.FileStorage,
		MaxValueSize: MaxBundleSize,
		Replicas:     max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", name, err)
	}
	return kv, nil
}

// stream returns the bucket's stream, as the server described it now.
func (b *Bundles) stream(ctx context.Context) (jetstream.Stream, error) {
	return b.js.Stream(ctx, "KV_"+b.Bucket())
}

// identity tells the bucket apart from any other of the same name, one deleted and created again
// say: its name and the creation time of its stream.
func (b *Bundles) identity(ctx context.Context) (string, error) {
	stream, err := b.stream(ctx)
	if err != nil {
		return "", fmt.Errorf("describe bucket of bundles: %w", err)
	}
	return b.Bucket() + "@" + stream.CachedInfo().Created.UTC().Format(time.RFC3339Nano), nil
}

// sequence returns the sequence, in the bucket's stream, of the write of the bundle it holds under
// key, as putPrinted returned it: 0 when it holds none.
func (b *Bundles) sequence(ctx context.Context, key string) (uint64, error) {
	e, err := entryAt(ctx, b, key)
	if e == nil || err != nil {
		return 0, err
	}
	return e.Revision(), nil
}
