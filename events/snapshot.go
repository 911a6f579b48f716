package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SnapshotBucket is the KV bucket of aggregate snapshots, one key per establishment.
const SnapshotBucket = "AGGREGATES"

// MaxSnapshotSize is the largest snapshot stored; a larger state is simply not cached.
const MaxSnapshotSize = 4 << 20

// Snapshot is a cached state of one establishment, as of one record of the log: whoever folds
// that establishment's records up to that one gets the same state, and only needs the records
// after it. It is derived data: deleting every snapshot loses nothing.
type Snapshot struct {
	// Establishment is the slug.
	Establishment string
	// Sequence is the stream sequence of the last record the state includes.
	Sequence uint64
	// CommandID is the command id of that record, so that a reader can tell that the snapshot
	// still describes the log it reads (a log rebuilt from scratch reuses sequences).
	CommandID string
	// Format names the encoding of State and the rules that folded it; a reader ignores a
	// snapshot of any format but its own.
	Format string
	// State is the folded state, opaque to this package.
	State []byte
}

// snapshotHeader is the first line of a stored snapshot; the state follows it.
type snapshotHeader struct {
	Format    string `json:"format"`
	Sequence  uint64 `json:"sequence"`
	CommandID string `json:"command_id"`
}

// Snapshots keeps aggregate snapshots in SnapshotBucket. It is safe for concurrent use.
type Snapshots struct {
	kv jetstream.KeyValue
}

// OpenSnapshots creates the bucket, or updates it to this configuration, and returns its store.
// Values are compressed at rest; replicas is the number of copies on a cluster (0 means 1).
func OpenSnapshots(ctx context.Context, nc *nats.Conn, replicas int) (*Snapshots, error) {
	if nc == nil {
		return nil, fmt.Errorf("open bucket %s: nil connection", SnapshotBucket)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", SnapshotBucket, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       SnapshotBucket,
		Description:  "Aggregate snapshots: a cache of the event log, one key per establishment.",
		History:      1,
		Storage:      jetstream.FileStorage,
		Compression:  true,
		MaxValueSize: MaxSnapshotSize + 1024,
		Replicas:     max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", SnapshotBucket, err)
	}
	return &Snapshots{kv: kv}, nil
}

// Get returns the snapshot of establishment slug; ok is false when there is none, or when the
// stored value cannot be read (it is then as good as absent, and will be replaced).
func (s *Snapshots) Get(ctx context.Context, slug string) (snap Snapshot, ok bool, err error) {
	if err := checkSubjectToken(slug); err != nil {
		return Snapshot{}, false, fmt.Errorf("get snapshot: %w: %w", ErrInvalidSlug, err)
	}
	e, err := s.kv.Get(ctx, slug)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("get snapshot %s: %w", slug, err)
	}
	head, state, found := bytes.Cut(e.Value(), []byte("\n"))
	var h snapshotHeader
	if !found || json.Unmarshal(head, &h) != nil || h.Sequence == 0 {
		return Snapshot{}, false, nil
	}
	return Snapshot{Establishment: slug, Sequence: h.Sequence, CommandID: h.CommandID, Format: h.Format, State: state}, true, nil
}

// ErrSnapshotTooLarge reports a state larger than MaxSnapshotSize: Put stores nothing.
var ErrSnapshotTooLarge = errors.New("events: snapshot too large")

// Put stores snap, replacing the establishment's previous snapshot.
func (s *Snapshots) Put(ctx context.Context, snap Snapshot) error {
	if err := checkSubjectToken(snap.Establishment); err != nil {
		return fmt.Errorf("put snapshot: %w: %w", ErrInvalidSlug, err)
	}
	if len(snap.State) > MaxSnapshotSize {
		return fmt.Errorf("put snapshot %s: %w: %d bytes", snap.Establishment, ErrSnapshotTooLarge, len(snap.State))
	}
	head, err := json.Marshal(snapshotHeader{Format: snap.Format, Sequence: snap.Sequence, CommandID: snap.CommandID})
	if err != nil {
		return fmt.Errorf("put snapshot %s: %w", snap.Establishment, err)
	}
	value := make([]byte, 0, len(head)+1+len(snap.State))
	value = append(append(append(value, head...), '\n'), snap.State...)
	if _, err := s.kv.Put(ctx, snap.Establishment, value); err != nil {
		return fmt.Errorf("put snapshot %s: %w", snap.Establishment, err)
	}
	return nil
}

// Delete removes the snapshot of slug, if any.
func (s *Snapshots) Delete(ctx context.Context, slug string) error {
	if err := s.kv.Delete(ctx, slug); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete snapshot %s: %w", slug, err)
	}
	return nil
}
