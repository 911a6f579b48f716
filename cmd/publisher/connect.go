package main

import (
	"context"

	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/projections/runner"
)

// connect starts the embedded NATS server unless a URL is configured, and connects to NATS.
func (m *Main) connect() error {
	c := &m.Config
	n, err := node.Start(node.Config{
		URL: c.NATSURL, Auth: c.NATSAuth,
		Listen: c.NATSListen, DataDir: c.DataDir, SyncAlways: c.SyncAlways, MaxStore: c.NATSMaxStore,
		Debug: c.LogLevel == "debug", Logger: m.Logger,
		// The read API, while the process starts, answers /readyz with what it waits for.
		Waiting: m.listeners.Waiting,
	})
	if err != nil {
		return err
	}
	m.node, m.NATS, m.Conn = n, n.Server(), n.Conn()
	return nil
}

// provision opens what open opens on m's NATS, again and again while it is away (see
// node.Node.Provision).
func provision[T any](ctx context.Context, m *Main, what string, open func(context.Context) (T, error)) (T, error) {
	return node.Opened(ctx, m.node.Provision, what, open)
}

// maxBundle is the largest bundle of documents this deployment stores: the bucket's limit, or the
// connection's maximum payload when lower.
func (m *Main) maxBundle() int { return int(min(m.Conn.MaxPayload(), runner.MaxBundleSize)) }
