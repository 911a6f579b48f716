package main

import (
	"context"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/settings"
	"github.com/opencarte/publisher/domain"
	apiusage "github.com/opencarte/publisher/readapi/usage"
)

// startUsage reads, once for the process, the use of each API key the read nodes report, and
// sets APIUsage, which answers it per establishment.
func (m *Main) startUsage() error {
	c := &m.Config
	r, err := apiusage.Start(m.Conn, apiusage.Config{
		Window: c.QuotaWindow, Quota: c.KeyQuota, Logger: m.Logger.With("role", roleAdmin),
	})
	if err != nil {
		return err
	}
	m.loops.Go("api usage", func(ctx context.Context) error {
		<-ctx.Done()
		_ = r.Close() // the connection may be closing first
		return nil
	})
	m.APIUsage = apiUsage(m.Commands, r)
	return nil
}

// apiUsage answers the use of the read API by an establishment's current key over the quota's
// window: none while its API is off, domain.ErrNotFound for an unknown establishment.
func apiUsage(cmds *app.Commands, r *apiusage.Reader) func(ctx context.Context, slug domain.Slug) (apiusage.Usage, error) {
	return func(ctx context.Context, slug domain.Slug) (apiusage.Usage, error) {
		hash, err := cmds.KeyHash(ctx, slug)
		if err != nil {
			return apiusage.Usage{}, err
		}
		return r.Of(hash), nil
	}
}

// settingsUsage is APIUsage as the settings page shows it.
func (m *Main) settingsUsage(ctx context.Context, slug domain.Slug) (settings.Usage, error) {
	u, err := m.APIUsage(ctx, slug)
	return settings.Usage(u), err
}
