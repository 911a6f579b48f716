package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/changes"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/amqp"
	"github.com/opencarte/publisher/webhook/destination/kafka"
	"github.com/opencarte/publisher/webhook/destination/natsdest"
	"github.com/opencarte/publisher/webhook/destination/postgres"
)

// destinationsLease names the lease of the process that publishes to the broker destinations.
const destinationsLease = "destinations"

// openDestinations opens the store of broker destinations: the admin role registers them, the
// webhook role publishes to them.
func (m *Main) openDestinations(ctx context.Context, js jetstream.JetStream, signals *events.Signals) error {
	keys, err := m.masterKeys()
	if err != nil {
		return err
	}
	m.destinations, err = provision(ctx, m, "the destinations' bucket", func(ctx context.Context) (*destination.Store, error) {
		return destination.OpenStore(ctx, js, keys, signals, m.Config.Replicas)
	})
	if err != nil {
		return fmt.Errorf("open destinations: %w", err)
	}
	m.signals = signals
	if m.Config.has(roleWebhook) {
		m.metrics.Destinations(m.destinations.List)
	}
	return nil
}

// runDestinations publishes to the broker destinations while this process holds their lease.
func (m *Main) runDestinations(ctx context.Context) error {
	js, err := jetstream.New(m.Conn)
	if err != nil {
		return err
	}
	leases, err := generation.OpenLeases(ctx, js, m.Config.Replicas)
	if err != nil {
		return fmt.Errorf("destinations: leases: %w", err)
	}
	feed, err := changes.New(changes.Config{
		Conn: m.Conn, Signals: m.signals,
		Generation: func() int { g, _ := m.gens.watch.State(); return g.Served() },
	})
	if err != nil {
		return err
	}
	defer feed.Close()
	runner := destination.NewRunner(destination.RunnerConfig{
		Store: m.destinations, Source: m.PublicURL(), Openers: destinationOpeners,
		Logger: m.Logger.With("role", roleWebhook),
		Feed: func(ctx context.Context, after string, limit int, wait time.Duration) ([]events.Change, string, error) {
			page, err := feed.Read(ctx, after, limit, wait)
			if errors.Is(err, changes.ErrGone) && !errors.Is(err, events.ErrChangesGone) {
				err = fmt.Errorf("%w: %w", events.ErrChangesGone, err)
			}
			return page.Changes, page.Next, err
		},
	})
	return generation.Leased(ctx, leases, destinationsLease, processName(), runner.Run)
}

// destinationOpeners connect to the brokers, by destination type.
var destinationOpeners = map[string]destination.Opener{
	destination.TypeKafka:    kafka.Open,
	destination.TypeAMQP:     amqp.Open,
	destination.TypeNATS:     natsdest.Open,
	destination.TypePostgres: postgres.Open,
}

// destinationChecks check registrations as their brokers' openers will read them.
var destinationChecks = map[string]destination.Checker{
	destination.TypeAMQP:     amqp.Check,
	destination.TypeNATS:     natsdest.Check,
	destination.TypePostgres: postgres.Check,
}
