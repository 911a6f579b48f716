package settings

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// maxRecordBytes bounds a record of either bucket.
const maxRecordBytes = 4096

// keyOf returns the bucket key of secret s: the hex SHA-256 of its text, never s itself. ok is
// false for text that no secret of this package has the shape of.
func keyOf(s string) (key string, ok bool) {
	if len(s) != app.SecretLen {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(s); err != nil {
		return "", false
	}
	return app.SecretDigest(s), true
}

// openBucket creates the bucket, or updates it to this configuration: its keys are forgotten
// ttl after they are written. Its count of records is bounded by putRecord, not by a size of the
// stream's, which JetStream would reserve on its volume whether used or not.
func openBucket(ctx context.Context, js jetstream.JetStream, name, description string, replicas int, ttl time.Duration) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: name, Description: description,
		History: 1, TTL: ttl, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
		MaxValueSize: maxRecordBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("settings: bucket %s: %w", name, err)
	}
	return kv, nil
}

// getRecord reads the record at key into v and returns its revision; found is false when the
// bucket holds none there.
func getRecord(ctx context.Context, kv jetstream.KeyValue, key string, v any) (revision uint64, found bool, err error) {
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("%w: settings: read %s: %w", app.ErrUnavailable, kv.Bucket(), err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		// A record this code cannot read opens nothing.
		return 0, false, nil
	}
	return e.Revision(), true, nil
}

// putRecord stores v at a new key, unless the bucket holds limit records or more (a count read
// first: concurrent puts may pass it by a few).
func putRecord(ctx context.Context, kv jetstream.KeyValue, limit int, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("%w: settings: count %s: %w", app.ErrUnavailable, kv.Bucket(), err)
	}
	if st.Values() >= uint64(limit) {
		return fmt.Errorf("%w: settings: %s holds %d records, the most it keeps", app.ErrUnavailable, kv.Bucket(), st.Values())
	}
	if _, err := kv.Create(ctx, key, data); err != nil {
		return fmt.Errorf("%w: settings: store in %s: %w", app.ErrUnavailable, kv.Bucket(), err)
	}
	return nil
}
