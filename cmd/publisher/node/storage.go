package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// noStoreLimit is the embedded server's limit of stored bytes when Config.MaxStore sets none:
// none of its own. Left to itself, the server would take 75 % of the space free at its start, a
// limit that a restart on a nearly full volume makes smaller than what is stored already, and
// that room made later never raises (raising it takes a reload of the server's options, which
// races with its own readers of them). The data volume's free space bounds the store instead,
// watched against the reserve, and follows the volume as it grows.
const noStoreLimit = 1 << 62

// maxStore is the embedded server's limit of stored bytes: configured, else none of its own.
func maxStore(configured int64) int64 {
	if configured > 0 {
		return configured
	}
	return noStoreLimit
}

// storageFresh is how old a reading of the embedded server's storage a write may be decided on.
const storageFresh = 25 * time.Millisecond

// Storage fills in what a capacity guard reads of the stores: the embedded server's count of
// stored bytes and its volume, read in the process, in tens of microseconds, so that each write
// may ask, with the start again of its JetStream as maintenance; or the account's usage and limit
// on an external NATS, whose servers' volumes are theirs to watch.
func (n *Node) Storage(cfg capacity.Config) (capacity.Config, error) {
	if n.server != nil {
		cfg.Read, cfg.Fresh = embeddedReading(n.server, n.opts.StoreDir), storageFresh
		cfg.Maintain = n.restartJetStream
		return cfg, nil
	}
	js, err := jetstream.New(n.conn)
	if err != nil {
		return cfg, fmt.Errorf("jetstream: %w", err)
	}
	cfg.Read = accountReading(js)
	return cfg, nil
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

// restartJetStream starts the embedded server's JetStream again, in the process, once the volume
// has room again, to load the streams that stopped writing when it ran out. The roles'
// connections stay up; their consumers and watches start again as after a server restart, and
// what OnReconnect was given is called.
func (n *Node) restartJetStream(ctx context.Context, r capacity.Reading, reserve uint64) error {
	s := n.server
	if len(r.Broken) == 0 || r.VolumeSize > 0 && r.VolumeFree < reserve {
		return nil
	}
	n.cfg.Logger.Warn("storage: the volume has room again; starting jetstream again to load the streams that stopped writing", "streams", r.Broken)
	if s.JetStreamEnabled() {
		if err := s.ShutdownJetStream(); err != nil {
			return fmt.Errorf("stop jetstream: %w", err)
		}
	}
	// As at the start: the store's directory, the limit (dynamic memory and sync settings come
	// from the server's options).
	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: n.opts.StoreDir, MaxStore: n.opts.JetStreamMaxStore}); err != nil {
		return fmt.Errorf("start jetstream again: %w", err)
	}
	n.mu.Lock()
	restarted := n.restarted
	n.mu.Unlock()
	for _, f := range restarted {
		f()
	}
	return nil
}

// accountReading reads the account's stored bytes and its limit on an external NATS.
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
