package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket holds the generations record.
const Bucket = "GENERATIONS"

const recordKey = "documents"

// Phases of a rebuild.
const (
	phaseBuilding   = "building"
	phaseSwitching  = "switching"
	phaseAnnouncing = "announcing"
)

// switchGrace is how long the projector waits, once asked to stop for a switch, before it takes
// its lease again if the rebuild has not taken it.
const switchGrace = 15 * time.Second

// Record is the generations record: which generation of the documents is served, and the rebuild
// under way.
type Record struct {
	// Current is the generation served; 0 stands for 1, the first.
	Current int `json:"current"`
	// SwitchRevision is the revision of the current generation's bucket that a read node holds
	// before it serves the generation, set when a rebuild switched to it.
	SwitchRevision uint64    `json:"switch_revision,omitempty"`
	Switched       time.Time `json:"switched,omitzero"`
	// Rebuild is the rebuild under way, if any.
	Rebuild *Rebuilding `json:"rebuild,omitempty"`
	// Highest is the highest generation a rebuild began: a number is never used twice.
	Highest int `json:"highest,omitempty"`
}

// Rebuilding is the rebuild under way, as the record keeps it for every process to see and for
// the next run of the rebuild to resume.
type Rebuilding struct {
	// From is the generation served when the rebuild began, Next the one it builds.
	From  int    `json:"from"`
	Next  int    `json:"next"`
	Phase string `json:"phase"`
	// Position is where the current generation's projector was, at most, when the build began:
	// the records after it are compared again at the switch.
	Position uint64 `json:"position"`
	// FilesURL is the base URL of uploaded files the current projector renders under, and
	// Replayed when it last replayed the whole log, as its checkpoint said when the rebuild began.
	FilesURL string    `json:"files_url"`
	Replayed time.Time `json:"replayed,omitzero"`
	Started  time.Time `json:"started"`
	// SwitchAsked is when the phase became switching.
	SwitchAsked time.Time `json:"switch_asked,omitzero"`
}

// Served returns the generation served, at least 1.
func (g Record) Served() int { return max(g.Current, 1) }

// preparing returns the generation read nodes load beside the current one, 0 for none.
func (g Record) preparing() int {
	if g.Rebuild != nil && g.Rebuild.Phase != phaseAnnouncing && g.Rebuild.Next != g.Served() {
		return g.Rebuild.Next
	}
	return 0
}

// switching says the current generation's projector is to stop: a rebuild asked for it less
// than switchGrace ago, or holds its lease.
func (g Record) switching() bool {
	return g.Rebuild != nil && g.Rebuild.Phase == phaseSwitching
}

// OpenBucket creates the generations bucket, or updates it to this configuration.
func OpenBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "Which generation of the documents is served, and the rebuild under way.",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
}

// Read returns the generations record of kv and its revision, 0 when there is none.
func Read(ctx context.Context, kv jetstream.KeyValue) (Record, uint64, error) {
	e, err := kv.Get(ctx, recordKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, 0, nil
	}
	if err != nil {
		return Record{}, 0, fmt.Errorf("read the generations record: %w", err)
	}
	var g Record
	if err := json.Unmarshal(e.Value(), &g); err != nil {
		return Record{}, 0, fmt.Errorf("read the generations record: %w", err)
	}
	return g, e.Revision(), nil
}

// write replaces the record at revision rev (0: there is none) by g, and returns the new
// revision; it fails with jetstream.ErrKeyExists when another process changed it since.
func write(ctx context.Context, kv jetstream.KeyValue, g Record, rev uint64) (uint64, error) {
	value, err := json.Marshal(g)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return kv.Create(ctx, recordKey, value)
	}
	return kv.Update(ctx, recordKey, value, rev)
}
