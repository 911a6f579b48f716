package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/supervise"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// startProjector runs the projector under its lease, one process at a time, on the generation
// of the documents current.
func (m *Main) startProjector(ctx context.Context, js jetstream.JetStream, signals *events.Signals) error {
	c := &m.Config
	rendered := m.metrics.Projector(func() (uint64, bool) {
		if p := m.Projector(); p != nil {
			return p.Position(), true
		}
		return 0, false
	})
	// --projector-replay asks for one replay, by the first projector this process runs: not
	// again after a switch of generations, which a replay would make a rebuild refuse.
	var replayAsked atomic.Bool
	replayAsked.Store(c.ProjectorReplay)
	sup, err := generation.NewSupervisor(generation.Config{
		JetStream: js, Replicas: c.Replicas, Watch: m.gens.watch, Holder: processName(), Embedded: m.NATS != nil,
		New: func(docs *runner.Bundles, state jetstream.KeyValue) (*runner.Projector, error) {
			notifier := generation.SignalNotifier{Signals: signals, Count: rendered}
			return runner.New(runner.Config{
				Store: m.Store, KV: docs, State: state, CacheSize: c.ProjectorCache, ReplayAll: replayAsked.Swap(false),
				Logger: m.Logger.With("role", roleProjector),
				// A change signal goes out once every document of the new revision is stored.
				Notifier: notifier, Announcements: notifier, AllAnnouncements: notifier,
				// A bundle larger than the server accepts is refused at once rather than retried.
				MaxValueSize: m.maxBundle(),
				Workers:      c.ProjectorWorkers,
				SpillDir:     c.DataDir,
				FilesURL:     m.PublicURL(),
				Now:          c.Now, // the clock that dates the records
				// A start asks only about the announcements the signals still keep.
				SignalRetention: c.ChangeRetention,
			})
		},
		Provision: m.node.Provision, Health: m.loops, Logger: m.Logger,
		Pause: supervise.RestartPause, MaxPause: supervise.RestartMaxPause, Healthy: supervise.HealthyAfter,
	})
	if err != nil {
		return err
	}
	if err := sup.Start(ctx); err != nil {
		return err
	}
	m.gens.projector = sup
	m.loops.Go(roleProjector, sup.Run)
	return nil
}

// processName names this process to operators: its host and process id, and a random part
// (containers often all run as process 1).
func processName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), app.NewID("p"))
}
