package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
)

// The documents are served from one generation of the bucket of bundles at a time. A rebuild
// renders the log into the next generation while the current one is served and projected, then
// switches every process to it at once. The key documents of the bucket GENERATIONS says which
// generation is current and what rebuild is under way; every process watches it.
//
//   - building: the rebuild renders into the next generation; read nodes load it beside the
//     current one.
//   - switching: the projector of the current generation stops and lets the rebuild take its
//     lease; the rebuild brings the next generation level with the log and above the current
//     one, then writes, in one update, the next generation as current and the phase announcing.
//     A projector that finds no rebuild holding the lease after switchGrace goes on projecting the
//     current generation, so that a rebuild that died stops nothing for long.
//   - announcing: read nodes serve the new generation as soon as they hold it up to the switch
//     revision; the projector projects into it; the rebuild announces the establishments whose
//     documents changed, then removes the old generation and the rebuild record.

// GenerationsBucket holds the generations record.
const GenerationsBucket = "GENERATIONS"

const generationsKey = "documents"

// Phases of a rebuild.
const (
	phaseBuilding   = "building"
	phaseSwitching  = "switching"
	phaseAnnouncing = "announcing"
)

// switchGrace is how long the projector waits, once asked to stop for a switch, before it takes
// its lease again if the rebuild has not taken it.
const switchGrace = 15 * time.Second

// generations is the generations record.
type generations struct {
	// Current is the generation served; 0 stands for 1, the first.
	Current int `json:"current"`
	// SwitchRevision is the revision of the current generation's bucket that a read node holds
	// before it serves the generation, set when a rebuild switched to it.
	SwitchRevision uint64    `json:"switch_revision,omitempty"`
	Switched       time.Time `json:"switched,omitzero"`
	// Rebuild is the rebuild under way, if any.
	Rebuild *rebuildState `json:"rebuild,omitempty"`
	// Highest is the highest generation a rebuild began: a number is never used twice.
	Highest int `json:"highest,omitempty"`
}

type rebuildState struct {
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

func (g generations) current() int { return max(g.Current, 1) }

// preparing returns the generation read nodes load beside the current one, 0 for none.
func (g generations) preparing() int {
	if g.Rebuild != nil && g.Rebuild.Phase != phaseAnnouncing && g.Rebuild.Next != g.current() {
		return g.Rebuild.Next
	}
	return 0
}

// switching says the current generation's projector is to stop: a rebuild asked for it less
// than switchGrace ago, or holds its lease.
func (g generations) switching() bool {
	return g.Rebuild != nil && g.Rebuild.Phase == phaseSwitching
}

func openGenerationsBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      GenerationsBucket,
		Description: "Which generation of the documents is served, and the rebuild under way.",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
}

// readGenerations returns the generations record and its revision, 0 when there is none.
func readGenerations(ctx context.Context, kv jetstream.KeyValue) (generations, uint64, error) {
	e, err := kv.Get(ctx, generationsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return generations{}, 0, nil
	}
	if err != nil {
		return generations{}, 0, fmt.Errorf("read the generations record: %w", err)
	}
	var g generations
	if err := json.Unmarshal(e.Value(), &g); err != nil {
		return generations{}, 0, fmt.Errorf("read the generations record: %w", err)
	}
	return g, e.Revision(), nil
}

// writeGenerations replaces the record at revision rev (0: there is none) by g, and returns the
// new revision; it fails with jetstream.ErrKeyExists when another process changed it since.
func writeGenerations(ctx context.Context, kv jetstream.KeyValue, g generations, rev uint64) (uint64, error) {
	value, err := json.Marshal(g)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return kv.Create(ctx, generationsKey, value)
	}
	return kv.Update(ctx, generationsKey, value, rev)
}

// generationWatch keeps the last generations record a process saw, and wakes who waits for it to
// change.
type generationWatch struct {
	kv     jetstream.KeyValue
	logger *slog.Logger

	mu      sync.Mutex
	g       generations
	changed chan struct{} // closed and replaced when g changes; guarded by mu
	restart chan struct{}
}

// watchGenerations reads the record of kv; run then follows its changes.
func watchGenerations(ctx context.Context, kv jetstream.KeyValue, logger *slog.Logger) (*generationWatch, error) {
	g, _, err := readGenerations(ctx, kv)
	if err != nil {
		return nil, err
	}
	return &generationWatch{kv: kv, logger: logger, g: g, changed: make(chan struct{}), restart: make(chan struct{}, 1)}, nil
}

// state returns the record as last seen and a channel closed when it changes.
func (w *generationWatch) state() (generations, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.g, w.changed
}

// projectedBy returns the generation of the documents p projects into, 0 when unknown.
func projectedBy(p *runner.Projector) int {
	return dockey.GenerationOf(p.Bucket())
}

// Rewatch starts the watch again: after a reconnection, a watch whose consumer was lost would
// otherwise resume only once the client noticed.
func (w *generationWatch) Rewatch() {
	select {
	case w.restart <- struct{}{}:
	default:
	}
}

func (w *generationWatch) set(g generations) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.g = g
	close(w.changed)
	w.changed = make(chan struct{})
}

// run follows the record until ctx ends.
func (w *generationWatch) run(ctx context.Context) error {
	for ctx.Err() == nil {
		wctx, stop := context.WithCancel(ctx)
		kw, err := w.kv.Watch(wctx, generationsKey)
		if err != nil {
			stop()
			w.logger.Debug("generations: watch not started, trying again", "err", err)
			if events.Sleep(ctx, time.Second) != nil {
				return nil
			}
			continue
		}
	follow:
		for {
			select {
			case <-ctx.Done():
				break follow
			case <-w.restart:
				break follow
			case e, ok := <-kw.Updates():
				if !ok {
					break follow
				}
				if e == nil {
					continue
				}
				var g generations
				if e.Operation() == jetstream.KeyValuePut {
					if err := json.Unmarshal(e.Value(), &g); err != nil {
						w.logger.Error("generations: record cannot be read", "err", err)
						continue
					}
				}
				w.set(g)
			}
		}
		_ = kw.Stop()
		stop()
	}
	return nil
}
