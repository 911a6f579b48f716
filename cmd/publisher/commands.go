package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/webhookapp"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
)

// openCommands sets up the write side's application layer, with the files store when the api or
// admin role runs.
func (m *Main) openCommands(ctx context.Context, js jetstream.JetStream, snapshots *events.Snapshots) error {
	var trail *events.Audit
	if c := &m.Config; c.has(roleAPI) || c.has(roleAdmin) {
		var err error
		if m.Files, err = provision(ctx, m, "the files store", func(ctx context.Context) (*events.Files, error) {
			return events.OpenFiles(ctx, js, c.Replicas)
		}); err != nil {
			return err
		}
		if trail, err = provision(ctx, m, "the audit trail", func(ctx context.Context) (*events.Audit, error) {
			return events.OpenAudit(ctx, m.Conn, events.AuditConfig{Replicas: c.Replicas, Keep: c.AuditKeep, Failed: func(slug string, err error) {
				m.Logger.Warn("audit entry not stored", "establishment", slug, "err", err)
			}})
		}); err != nil {
			return err
		}
	}
	cfg := app.Config{
		Log: m.Store, Snapshots: snapshots, Clock: m.Clock.Today, Logger: m.Logger,
		CacheSize: m.Config.CacheSize, SnapshotEvery: m.Config.SnapshotEach,
		PublicURL: m.PublicURL(), FileGrace: m.Config.FileGrace, Now: m.Config.Now,
		Room: m.storage.Full,
	}
	if m.Files != nil {
		cfg.Files = m.Files
	}
	if trail != nil {
		cfg.Audit = trail
	}
	if m.Webhooks != nil {
		cfg.Webhooks = webhookapp.NewRegistry(m.Webhooks.Registry())
	}
	// A change is refused when the establishment's documents would not fit the bucket: accepted,
	// it could never be served.
	maxBundle := m.maxBundle()
	cfg.CheckContent = func(e *domain.Establishment, created bool, eventBytes int) error {
		if created && !projections.NamesFiles(e) && projections.CreatedBound(eventBytes) <= maxBundle {
			return nil // an establishment this small fits without being rendered
		}
		fits, n, err := projections.FitsIn(e, m.PublicURL(), maxBundle)
		if err != nil {
			return err
		}
		if !fits {
			return fmt.Errorf("%w: the published documents would take %d bytes, at most %d", app.ErrTooLarge, n, maxBundle)
		}
		return nil
	}
	var err error
	m.Commands, err = app.New(cfg)
	return err
}
