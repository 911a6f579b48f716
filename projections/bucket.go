package projections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
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
	// Watch delivers the current values of the keys matching keys, then a nil entry.
	Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
}

// OpenBucket creates the bucket dockey.Bucket, or updates it to this configuration: one value
// per key, file storage, values up to MaxBundleSize, replicas copies (at least 1).
func OpenBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       dockey.Bucket,
		Description:  "Rendered documents and access state, one bundle per establishment.",
		History:      1,
		Storage:      jetstream.FileStorage,
		MaxValueSize: MaxBundleSize,
		Replicas:     max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", dockey.Bucket, err)
	}
	return kv, nil
}

// EncodedSize returns the size in bytes of the bundle the projector would store for e, with a
// revision as long as any it can have: what a write side checks against the bucket's maximum
// value size before accepting a change, so that no accepted change is left unserved.
func EncodedSize(e *domain.Establishment) (int, error) {
	b := Render(e, math.MaxInt64)
	compress(&b)
	data, err := EncodeBundle(&b)
	return len(data), err
}

// EncodeBundle returns the stored form of b: compact JSON in which the document bodies appear
// byte for byte as rendered (no HTML escaping), so that what a reader decodes is what was
// rendered and what its entity tag covers.
func EncodeBundle(b *dockey.Bundle) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, fmt.Errorf("encode bundle %s: %w", b.Slug, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// loadBundles reads every bundle stored in kv, by slug. A value that cannot be decoded is
// logged and left out: it will be replaced.
func loadBundles(ctx context.Context, kv Bucket, logger *slog.Logger) (map[string]dockey.Bundle, error) {
	w, err := kv.Watch(ctx, dockey.Watch, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("read stored bundles: %w", err)
	}
	defer func() {
		if err := w.Stop(); err != nil {
			logger.Debug("stop bundle watcher", "err", err)
		}
	}()
	out := make(map[string]dockey.Bundle)
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read stored bundles: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("read stored bundles: watcher closed")
			}
			if e == nil {
				return out, nil
			}
			slug, ok := dockey.SlugOf(e.Key())
			if !ok {
				continue
			}
			var b dockey.Bundle
			if err := json.Unmarshal(e.Value(), &b); err != nil {
				logger.Warn("stored bundle cannot be decoded and will be replaced", "key", e.Key(), "err", err)
				continue
			}
			out[slug] = b
		}
	}
}
