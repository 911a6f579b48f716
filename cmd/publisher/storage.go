package main

import (
	"context"
	"errors"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// storagePart names the storage in what the process reports degraded.
const storagePart = "storage"

// openStorageGuard starts watching the room left: the embedded server's count of stored bytes and
// its volume, or the account's limit on an external NATS. Writes that grow the stores are refused
// while it is short; /readyz and the status say so.
func (m *Main) openStorageGuard(ctx context.Context) error {
	cfg, err := m.node.Storage(capacity.Config{
		Reserve: uint64(max(m.Config.StorageReserve, 0)), Logger: m.Logger.With("part", "storage"),
		OnChange: func(full bool, reason string) {
			if full {
				m.loops.Fail(storagePart, errors.New("writes refused: "+reason))
			} else {
				m.loops.Recovered(storagePart)
			}
		},
	})
	if err != nil {
		return err
	}
	m.storage, err = capacity.New(ctx, cfg)
	return err
}
