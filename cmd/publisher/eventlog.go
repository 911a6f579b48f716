package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// sharedStreams are what the event log's roles share beside it, opened once by startEventLog.
type sharedStreams struct {
	snapshots *events.Snapshots
	signals   *events.Signals
}

// startEventLog provisions the event log and what every role shares: the generations record,
// followed from here on, the documents bucket served, the snapshots and the change signals.
func (m *Main) startEventLog(ctx context.Context, js jetstream.JetStream) (sharedStreams, error) {
	c := &m.Config
	var shared sharedStreams
	var err error
	m.Store, err = provision(ctx, m, "the event log", func(ctx context.Context) (*events.Store, error) {
		return events.Open(ctx, m.Conn, events.Config{Replicas: c.Replicas, Duplicates: c.DuplicateTTL})
	})
	if err != nil {
		return shared, fmt.Errorf("open event log: %w", err)
	}
	if err := m.startGenerations(ctx, js); err != nil {
		return shared, err
	}
	if shared.snapshots, err = provision(ctx, m, "the snapshots bucket", func(ctx context.Context) (*events.Snapshots, error) {
		return events.OpenSnapshots(ctx, m.Conn, c.Replicas)
	}); err != nil {
		return shared, fmt.Errorf("open snapshots: %w", err)
	}
	if shared.signals, err = provision(ctx, m, "the change signals", func(ctx context.Context) (*events.Signals, error) {
		return events.OpenSignalsFor(ctx, m.Conn, c.Replicas, c.ChangeRetention)
	}); err != nil {
		return shared, fmt.Errorf("open change signals: %w", err)
	}
	return shared, nil
}

// startGenerations follows the generations record, and opens the documents bucket of the
// generation served: the projector's creates it.
func (m *Main) startGenerations(ctx context.Context, js jetstream.JetStream) error {
	c := &m.Config
	var err error
	m.gens.watch, err = provision(ctx, m, "the generations bucket", func(ctx context.Context) (*generation.Watch, error) {
		return generation.OpenWatch(ctx, js, c.Replicas, m.Logger)
	})
	if err != nil {
		return fmt.Errorf("open generations bucket: %w", err)
	}
	m.loops.Go("generations", m.gens.watch.Run)
	m.node.OnReconnect(m.Conn, m.gens.watch.Rewatch)
	g, _ := m.gens.watch.State()
	m.Docs, err = provision(ctx, m, "the documents bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		switch {
		case c.has(roleProjector):
			docs, _, err := generation.OpenBuckets(ctx, js, g.Served(), c.Replicas)
			return docs, err
		case g.Served() == 1:
			return runner.OpenBucket(ctx, js, c.Replicas)
		}
		name, _ := runner.GenerationBuckets(g.Served())
		return js.KeyValue(ctx, name)
	})
	if err != nil {
		return fmt.Errorf("open documents bucket: %w", err)
	}
	return nil
}
