package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// noStoreLimit is the embedded server's limit of stored bytes when --nats-max-store sets none:
// none of its own. Left to itself, the server would take 75 % of the space free at its start, a
// limit that a restart on a nearly full volume makes smaller than what is stored already, and
// that room made later never raises (raising it takes a reload of the server's options, which
// races with its own readers of them). The data volume's free space bounds the store instead,
// watched against the reserve, and follows the volume as it grows.
const noStoreLimit = 1 << 62

// embeddedMaxStore is the embedded server's limit of stored bytes: --nats-max-store, else none
// of its own.
func embeddedMaxStore(c *Config) int64 {
	if c.NATSMaxStore > 0 {
		return c.NATSMaxStore
	}
	return noStoreLimit
}

// storagePart names the storage in what the process reports degraded.
const storagePart = "storage"

// storageFresh is how old a reading of the embedded server's storage a write may be decided on.
const storageFresh = 25 * time.Millisecond

// openStorageGuard starts watching the room left: the embedded server's count of stored bytes and
// its volume, or the account's limit on an external NATS. Writes that grow the stores are refused
// while it is short; /readyz and the status say so.
func (m *Main) openStorageGuard(ctx context.Context, js jetstream.JetStream) error {
	read, fresh := accountReading(js), time.Duration(0)
	var maintain func(context.Context, capacity.Reading, uint64) error
	if m.NATS != nil {
		// Read in the process, in tens of microseconds: each write may ask.
		read, fresh = embeddedReading(m.NATS, filepath.Join(m.Config.DataDir, "nats")), storageFresh
		maintain = m.maintainEmbedded(m.natsOpts)
	}
	g, err := capacity.New(ctx, capacity.Config{
		Read: read, Fresh: fresh, Maintain: maintain,
		Reserve: uint64(max(m.Config.StorageReserve, 0)), Logger: m.Logger.With("part", "storage"),
		OnChange: func(full bool, reason string) {
			if full {
				m.health.fail(storagePart, errors.New("writes refused: "+reason))
			} else {
				m.health.recovered(storagePart)
			}
		},
	})
	if err != nil {
		return err
	}
	m.storage = g
	return nil
}

// embeddedReading reads the embedded server's stored bytes and limit, the streams that stopped
// writing, and the free space of the volume under dir.
func embeddedReading(s *server.Server, dir string) func(context.Context) (capacity.Reading, error) {
	return func(context.Context) (capacity.Reading, error) {
		var r capacity.Reading
		var err error
		if r.VolumeFree, r.VolumeSize, err = capacity.Volume(dir); err != nil && !errors.Is(err, capacity.ErrNoVolume) {
			return capacity.Reading{}, err
		}
		if !s.JetStreamEnabled() {
			// Stopped (by a failed start again): nothing is written until it runs.
			r.Broken = []string{"JetStream, stopped"}
			return r, nil
		}
		info, err := s.Jsz(nil)
		if err != nil {
			return capacity.Reading{}, fmt.Errorf("jetstream usage: %w", err)
		}
		r.Used = info.Store
		if info.Config.MaxStore > 0 && info.Config.MaxStore < noStoreLimit {
			r.Limit = uint64(info.Config.MaxStore)
		}
		r.Broken = brokenStreams(s)
		return r, nil
	}
}

// brokenStreams names the embedded server's streams that stopped writing. A write the volume
// had no room for marks its stream with the error, and the server then neither stores nor
// answers any write to it until it loads the stream again; its health report is the one place
// that says so, in words.
func brokenStreams(s *server.Server) []string {
	var out []string
	for _, e := range s.Healthz(&server.HealthzOptions{Details: true}).Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			out = append(out, e.Stream)
		}
	}
	return out
}

// maintainEmbedded starts the embedded server's JetStream again, in the process, once the volume
// has room again, to load the streams that stopped writing when it ran out. The roles'
// connections stay up; their consumers and watches start again as after a server restart.
func (m *Main) maintainEmbedded(opts *server.Options) func(context.Context, capacity.Reading, uint64) error {
	return func(ctx context.Context, r capacity.Reading, reserve uint64) error {
		s := m.NATS
		if len(r.Broken) == 0 || r.VolumeSize > 0 && r.VolumeFree < reserve {
			return nil
		}
		m.Logger.Warn("storage: the volume has room again; starting jetstream again to load the streams that stopped writing", "streams", r.Broken)
		if s.JetStreamEnabled() {
			if err := s.ShutdownJetStream(); err != nil {
				return fmt.Errorf("stop jetstream: %w", err)
			}
		}
		// As at the start: the store's directory, the limit (dynamic memory and sync settings come
		// from the server's options).
		if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: opts.StoreDir, MaxStore: opts.JetStreamMaxStore}); err != nil {
			return fmt.Errorf("start jetstream again: %w", err)
		}
		for _, f := range m.jetStreamRestarted {
			f()
		}
		return nil
	}
}

// accountReading reads the account's stored bytes and its limit on an external NATS: the
// servers' volumes are theirs to watch.
func accountReading(js jetstream.JetStream) func(context.Context) (capacity.Reading, error) {
	return func(ctx context.Context) (capacity.Reading, error) {
		info, err := js.AccountInfo(ctx)
		if err != nil {
			return capacity.Reading{}, fmt.Errorf("jetstream account: %w", err)
		}
		r := capacity.Reading{Used: info.Store}
		if info.Limits.MaxStore > 0 {
			r.Limit = uint64(info.Limits.MaxStore)
		}
		return r, nil
	}
}
