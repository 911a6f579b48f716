package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/addrfile"
	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/cmd/publisher/telemetry"
	"github.com/opencarte/publisher/cmd/publisher/tokens"
	"github.com/opencarte/publisher/cmd/publisher/webhookapp"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/changes"
	"github.com/opencarte/publisher/readapi/apidocs"
)

// adminDocsPath is the path of the admin API's reference page on the admin listener, beside the
// description it renders, /admin/openapi.json.
const adminDocsPath = "/admin/docs"

// startAdmin serves the admin API, and runs the admin role's loops: the collection of files
// nothing refers to, and the sweep of signing secrets.
func (m *Main) startAdmin(ctx context.Context, signals *events.Signals) error {
	token, err := m.adminToken()
	if err != nil {
		return err
	}
	m.AdminToken = token
	if err := m.startUsage(); err != nil {
		return err
	}
	hooks := webhookapp.NewDeliveries(m.Webhooks)
	deliveries := app.NewDeliveries(m.Commands, hooks, hooks)
	page, err := m.openSettings(ctx, deliveries)
	if err != nil {
		return err
	}
	cfg := admin.Config{
		Commands: m.Commands, Token: token, Deliveries: deliveries,
		Logger: m.Logger.With("role", roleAdmin), Status: m.status, WaitLimit: m.Config.WaitLimit,
		Debug: telemetry.Profiles(), Observe: m.metrics.AdminRequests(),
		LoginLinks: page.CreateLink,
	}
	cfg.Projection = m.gens.served
	if m.Webhooks != nil {
		cfg.Platform = app.NewPlatform(webhookapp.NewPlatform(m.Webhooks))
	}
	if m.destinations != nil {
		cfg.Destinations = webhookapp.Destinations{Store: m.destinations, Checks: destinationChecks}
	}
	if cfg.Changes, err = m.changesFeed(signals); err != nil {
		return err
	}
	if cfg.Tokens, err = m.openTokens(ctx); err != nil {
		return err
	}
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
	// The settings page has its own sessions, opened by login links: it is served without the
	// token too.
	m.AdminURL = addrfile.Reachable(m.listeners.Serve(capacity.ListenerAdmin, page.Mount(docs.Mount(handler))))
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

// openTokens opens the scoped admin tokens, and keeps this process's cache of them current.
func (m *Main) openTokens(ctx context.Context) (*tokens.Store, error) {
	js, err := jetstream.New(m.Conn)
	if err != nil {
		return nil, err
	}
	store, err := provision(ctx, m, "the admin tokens", func(ctx context.Context) (*tokens.Store, error) {
		return tokens.Open(ctx, tokens.Config{
			JS: js, Replicas: m.Config.Replicas, Now: m.Config.Now,
			Exists: func(ctx context.Context, slug domain.Slug) error { _, err := m.Commands.Get(ctx, slug); return err },
		})
	})
	if err != nil {
		return nil, err
	}
	m.loops.Go("token watch", store.Watch)
	return store, nil
}

// openSettings opens the API settings page and the buckets of its login links and sessions.
func (m *Main) openSettings(ctx context.Context, deliveries *app.Deliveries) (*settings.Page, error) {
	js, err := jetstream.New(m.Conn)
	if err != nil {
		return nil, err
	}
	base := cmp.Or(strings.TrimRight(m.Config.AdminPublicURL, "/"), m.adminBound)
	return provision(ctx, m, "the settings page", func(ctx context.Context) (*settings.Page, error) {
		return settings.New(ctx, settings.Config{
			JS: js, Replicas: m.Config.Replicas, Commands: m.Commands, Deliveries: deliveries,
			Usage: m.settingsUsage, PublicURL: m.PublicURL(), BaseURL: func() string { return base },
			LinkLifetime: m.Config.SettingsLinkLifetime, SessionLifetime: m.Config.SettingsSessionLifetime,
			Logger: m.Logger.With("role", roleAdmin), Now: m.Config.Now,
		})
	})
}

// checkSettings checks the flags of the settings page, naming the one at fault.
func (c *Config) checkSettings() error {
	if c.AdminPublicURL != "" {
		u, err := url.Parse(c.AdminPublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return envflag.Usagef("serve", "--admin-public-url %q: want the absolute http or https base URL browsers reach the admin listener at", c.AdminPublicURL)
		}
	}
	if d := c.SettingsLinkLifetime; d < settings.MinLinkLifetime || d > settings.MaxLinkLifetime {
		return envflag.Usagef("serve", "--settings-link-lifetime %s: want %s to %s", d, settings.MinLinkLifetime, settings.MaxLinkLifetime)
	}
	if d := c.SettingsSessionLifetime; d < settings.MinSessionLifetime || d > settings.MaxSessionLifetime {
		return envflag.Usagef("serve", "--settings-session-lifetime %s: want %s to %s", d, settings.MinSessionLifetime, settings.MaxSessionLifetime)
	}
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

// changesFeed returns the changes feed the admin API serves, its errors given their kinds: a
// cursor that cannot be read is malformed, one too old is gone.
func (m *Main) changesFeed(signals *events.Signals) (func(ctx context.Context, after string, limit int, wait time.Duration) (any, error), error) {
	feed, err := changes.New(changes.Config{
		Conn: m.Conn, Signals: signals,
		Generation: func() int { g, _ := m.gens.watch.State(); return g.Served() },
	})
	if err != nil {
		return nil, err
	}
	m.loops.Go("changes feed", func(ctx context.Context) error {
		<-ctx.Done()
		feed.Close()
		return nil
	})
	retention := m.Config.ChangeRetention
	return func(ctx context.Context, after string, limit int, wait time.Duration) (any, error) {
		page, err := feed.Read(ctx, after, limit, wait)
		switch {
		case errors.Is(err, events.ErrInvalidCursor):
			return nil, &app.Refusal{Kind: app.KindMalformed, Err: fmt.Errorf("after: %w", err)}
		case errors.Is(err, changes.ErrGone):
			return nil, &app.Refusal{Kind: app.KindGone, Err: fmt.Errorf(
				"after: the changes after this cursor are no longer kept (changes are kept %s, --change-retention): start over without after, a full sync", retention)}
		}
		return page, err
	}, nil
}
