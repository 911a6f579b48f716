package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
)

// StateBucketName is the KV bucket where the projector keeps what lets it hold only some
// establishments in memory and start where it stopped: the state of establishments it let go of,
// and its checkpoint.
const StateBucketName = "PROJECTOR"

// Keys of the state bucket.
const (
	stateKeyPrefix = "est."
	checkpointKey  = "checkpoint"
)

func stateKey(slug string) string { return stateKeyPrefix + slug }

// stateFormat names the encoding of a stored establishment state, the domain's included: a state
// of another format is not read, the establishment is rebuilt from the log instead.
func stateFormat() string { return "projections/1+" + domain.StateFormat() }

// checkpointFormat names what a checkpoint vouches for: states of stateFormat and bundles of this
// renderer.
func checkpointFormat() string {
	return stateFormat() + "+render/" + strconv.Itoa(projections.RenderRevision)
}

// StateStore is the part of the state bucket the projector uses; jetstream.KeyValue satisfies it.
type StateStore interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error
}

// OpenStateBucket creates the bucket StateBucketName, or updates it to this configuration: one
// value per key, file storage, replicas copies (at least 1).
func OpenStateBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return openBucket(ctx, js, StateBucketName, "The projector's checkpoint and the state of establishments it does not hold in memory.", replicas)
}

// checkpoint says that every record of the log Log names up to Position is projected and stored
// in the bucket of bundles Bucket names.
type checkpoint struct {
	Format   string    `json:"format"`
	Position uint64    `json:"position"`
	Bucket   string    `json:"bucket"`
	Log      string    `json:"log"`
	Files    string    `json:"files_url"` // Config.FilesURL
	Written  time.Time `json:"written"`
	// Replayed is when the projector last finished a replay of the whole log, which may have
	// changed any bundle.
	Replayed time.Time `json:"replayed,omitzero"`
}

// readCheckpoint returns the stored checkpoint, with false when there is none of this code's
// format.
func readCheckpoint(ctx context.Context, kv StateStore) (checkpoint, bool, error) {
	e, err := entryAt(ctx, kv, checkpointKey)
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	if e == nil {
		return checkpoint{}, false, nil
	}
	var cp checkpoint
	if err := json.Unmarshal(e.Value(), &cp); err != nil || cp.Format != checkpointFormat() {
		return checkpoint{}, false, nil
	}
	return cp, true, nil
}

// Projected returns the position of the projector's last checkpoint in kv, the state bucket:
// every record of the log up to it is projected and stored. ok is false when there is none of
// this code's format. A process without the projector learns from it how far projection went.
func Projected(ctx context.Context, kv StateStore) (position uint64, ok bool, err error) {
	cp, ok, err := readCheckpoint(ctx, kv)
	return cp.Position, ok, err
}

// writeCheckpoint stores cp, with this code's format and the time.
func writeCheckpoint(ctx context.Context, kv StateStore, cp checkpoint) error {
	cp.Format, cp.Written = checkpointFormat(), time.Now().UTC()
	value, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, checkpointKey, value); err != nil {
		return fmt.Errorf("write checkpoint at %d: %w", cp.Position, err)
	}
	return nil
}

// saveCheckpoint stores the checkpoint at position of p's bucket and log.
func (p *Projector) saveCheckpoint(ctx context.Context, position uint64) error {
	return writeCheckpoint(ctx, p.cfg.State, checkpoint{Position: position, Bucket: p.bucket, Log: p.log, Files: p.cfg.FilesURL, Replayed: p.replayed})
}

// storedState is an establishment as the projector lets go of it: its aggregate after the record
// Sequence of the log Log names. During a replay of the whole log it also carries the replay's
// generation and the summary and change time the replay had reached, which the bucket does not
// hold yet, and that of its day ahead.
type storedState struct {
	Format   string                   `json:"format"`
	Log      string                   `json:"log"`
	Sequence uint64                   `json:"sequence"`
	State    json.RawMessage          `json:"state"`
	Replay   int64                    `json:"replay,omitempty"`
	Summary  *projections.SummaryJSON `json:"summary,omitempty"`
	Ahead    *projections.SummaryJSON `json:"ahead,omitempty"` // the summary of its day ahead's
	Changed  time.Time                `json:"changed,omitzero"`
}

// encodeState encodes t, an establishment of the log named log; with replay not zero, the
// replay's summary and change time too.
func encodeState(t *tracked, log string, replay int64) ([]byte, error) {
	state, err := domain.EncodeState(t.agg)
	if err != nil {
		return nil, err
	}
	st := storedState{Format: stateFormat(), Log: log, Sequence: t.seq, State: state}
	if replay != 0 {
		st.Replay, st.Changed = replay, t.changed
		if t.stored != nil {
			st.Summary = t.stored.JSON()
		}
		if t.ahead != nil {
			st.Ahead = t.ahead.JSON()
		}
	}
	return json.Marshal(st)
}

// decodeState returns the establishment slug of the log named log as a stored state holds it, and
// the replay generation it was written by; ok is false for a state of another format or log, or
// one that cannot be read, which is rebuilt from the log instead.
func decodeState(slug domain.Slug, log string, value []byte) (t *tracked, replay int64, ok bool) {
	var st storedState
	if err := json.Unmarshal(value, &st); err != nil || st.Format != stateFormat() || st.Log != log {
		return nil, 0, false
	}
	agg, err := domain.DecodeState(slug, st.State)
	if err != nil {
		return nil, 0, false
	}
	t = &tracked{agg: agg, seq: st.Sequence, changed: st.Changed}
	if st.Summary != nil {
		t.stored = st.Summary.Summary(string(slug))
	}
	if st.Ahead != nil {
		t.ahead = st.Ahead.Summary(string(slug))
	}
	return t, st.Replay, true
}
