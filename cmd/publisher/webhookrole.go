package main

import (
	"context"
	"fmt"

	"github.com/opencarte/publisher/webhook"
)

// openWebhooks opens the webhook dispatcher on its own connection: the webhook role delivers
// with it, the admin role registers endpoints.
func (m *Main) openWebhooks(ctx context.Context) error {
	c := &m.Config
	wc, err := m.node.Dial(roleWebhook)
	if err != nil {
		return err
	}
	masterKeys, err := m.masterKeys()
	if err != nil {
		return err
	}
	onAttempt := m.metrics.WebhookAttempts() // once: the start below may be tried again
	m.Webhooks, err = provision(ctx, m, "the webhook streams and buckets", func(ctx context.Context) (*webhook.Dispatcher, error) {
		return webhook.Open(ctx, wc, webhook.Config{
			Window: c.WebhookWindow, Timeout: c.WebhookTimeout, AllowPrivate: c.WebhookAllowPrivate,
			AllowedNetworks: c.WebhookNetworks, AllowHint: webhookAllowHint,
			RootCAs: c.WebhookRootCAs, Replicas: c.Replicas, MasterKeys: masterKeys,
			OnAttempt: onAttempt,
			Logger:    m.Logger.With("role", roleWebhook),
		})
	})
	if err != nil {
		return fmt.Errorf("open webhook dispatcher: %w", err)
	}
	m.node.OnReconnect(wc, m.Webhooks.Reconnected)
	m.metrics.Webhooks(m.Webhooks)
	return nil
}
