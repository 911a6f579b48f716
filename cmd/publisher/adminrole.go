package main

import (
	"context"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/telemetry"
	"github.com/opencarte/publisher/cmd/publisher/webhookapp"
	"github.com/opencarte/publisher/readapi/apidocs"
)

// adminDocsPath is the path of the admin API's reference page on the admin listener, beside the
// description it renders, /admin/openapi.json.
const adminDocsPath = "/admin/docs"

// startAdmin serves the admin API, and runs the admin role's loops: the collection of files
// nothing refers to, and the sweep of signing secrets.
func (m *Main) startAdmin(ctx context.Context) error {
	token, err := m.adminToken()
	if err != nil {
		return err
	}
	m.AdminToken = token
	hooks := webhookapp.NewDeliveries(m.Webhooks)
	cfg := admin.Config{
		Commands: m.Commands, Token: token, Deliveries: app.NewDeliveries(m.Commands, hooks, hooks),
		Logger: m.Logger.With("role", roleAdmin), Status: m.status, WaitLimit: m.Config.WaitLimit,
		Debug: telemetry.Profiles(), Observe: m.metrics.AdminRequests(),
	}
	cfg.Projection = m.gens.served
	api, err := admin.NewAPI(cfg)
	if err != nil {
		return err
	}
	handler := api.Handler()
	if m.wrapAdmin != nil {
		handler = m.wrapAdmin(handler)
	}
	// The reference page of the admin API holds no secret: it is served without the token, as the
	// description it renders is.
	docs, err := apidocs.New(apidocs.Config{Path: adminDocsPath, Description: "openapi.json", Title: "Admin API reference"})
	if err != nil {
		return err
	}
	m.AdminURL = addrfile.Reachable(m.listeners.Serve(capacity.ListenerAdmin, docs.Mount(handler)))
	// The commands given the same data directory find the admin API there; without the record
	// they need --admin-url, so failing to write it fails nothing else.
	if err := addrfile.Record(m.Config.DataDir, addrfile.Admin, m.AdminURL); err != nil {
		m.Logger.Warn("the admin api's address is not recorded: admin and import need --admin-url", "error", err)
	}
	if m.Config.FileCollectEvery > 0 {
		m.loops.Go("file collection", m.collectFiles)
	}
	m.loops.Go("secret sweep", m.sweepSecrets)
	return nil
}

// collectFiles removes, every FileCollectEvery, the uploaded files nothing refers to. A failed
// pass is logged and tried again at the next one.
func (m *Main) collectFiles(ctx context.Context) error {
	t := time.NewTicker(m.Config.FileCollectEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		rep, err := m.Commands.CollectFiles(ctx)
		if err != nil {
			m.Logger.Warn("file collection failed", "err", err)
			continue
		}
		m.Logger.Info("file collection", "stored", rep.Stored, "referenced", rep.Referenced, "young", rep.Young, "removed", len(rep.Removed), "took", time.Since(start).Round(time.Millisecond))
	}
}
