package runner

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/projections/dockey"
)

// MaxBundleSize is the largest encoded bundle, in bytes, the bucket accepts. The NATS server's
// max_payload must be at least as large.
const MaxBundleSize = 8 << 20

// Bucket is the part of the KV bucket of bundles the projector uses; jetstream.KeyValue
// satisfies it.
type Bucket interface {
	// Put stores value under key.
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Get returns the value under key, or jetstream.ErrKeyNotFound.
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	// Bucket returns the bucket's name.
	Bucket() string
	// Watch passes the last value of every key matching keys, then nil, then every change.
	Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
	// Status describes the bucket.
	Status(ctx context.Context) (jetstream.KeyValueStatus, error)
}

// OpenBucket creates the bucket dockey.Bucket, or updates it to this configuration: one value
// per key, file storage, values up to MaxBundleSize, replicas copies (at least 1). The bucket is
// a *Bundles.
func OpenBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
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
