package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/cmd/publisher/telemetry"
	"github.com/opencarte/publisher/cmd/publisher/webhookapp"
)

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
	url, err := m.listeners.Listen(m.Config.AdminAddr, capacity.ListenerAdmin, "admin api", api.Handler())
	if err != nil {
		return fmt.Errorf("admin api: %w", err)
	}
	m.AdminURL = url
	if m.Config.FileCollectEvery > 0 {
		m.loops.Go("file collection", m.collectFiles)
	}
	m.loops.Go("secret sweep", m.sweepSecrets)
	return nil
}

// adminToken returns the configured token, the one in --admin-token-file, or the one kept in the
// data directory, creating it.
func (m *Main) adminToken() (string, error) {
	c := &m.Config
	if c.AdminToken != "" {
		return c.AdminToken, nil
	}
	if c.AdminTokenFile != "" {
		b, err := secretfile.Read(c.AdminTokenFile)
		if err != nil {
			return "", fmt.Errorf("--admin-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("--admin-token-file %s: empty", c.AdminTokenFile)
		}
		return token, nil
	}
	path := filepath.Join(c.DataDir, "admin-token")
	b, err := secretfile.Read(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	token := app.NewID("adm")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return token, nil
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
