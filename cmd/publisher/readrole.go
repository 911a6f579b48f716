package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/telemetry"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
	"github.com/opencarte/publisher/readapi"
)

// startAPI starts the mirror among the loops and serves the read API once it caught up, unless ctx,
// the start's context, ends first.
func (m *Main) startAPI(ctx context.Context) error {
	mc, err := m.node.Dial(roleAPI)
	if err != nil {
		return err
	}
	mjs, err := jetstream.New(mc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	files, err := provision(ctx, m, "the files store", func(ctx context.Context) (*events.Files, error) {
		return events.OpenFiles(ctx, mjs, m.Config.Replicas)
	})
	if err != nil {
		return err
	}
	if err := m.startMirror(ctx, mc, mjs); err != nil {
		return err
	}
	if err := m.awaitMirror(ctx); err != nil {
		return err
	}
	if err := m.serveAPI(ctx, mc, mjs, files); err != nil {
		return err
	}
	m.settleReadNode() // once it serves: its collection takes a moment (0.75 s at 5 GiB)
	return nil
}

// startMirror loads the documents of the generation served into the read API's mirror, and
// keeps it on the generation served from then on.
func (m *Main) startMirror(ctx context.Context, mc *nats.Conn, mjs jetstream.JetStream) error {
	// The read API binds to the generation of the documents bucket served, which a process with
	// other roles may be creating: it waits for it.
	g, _ := m.gens.watch.State()
	docs, err := provision(ctx, m, "the documents bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		name, _ := runner.GenerationBuckets(g.Served())
		return mjs.KeyValue(ctx, name)
	})
	if err != nil {
		return fmt.Errorf("open documents bucket: %w", err)
	}
	m.Mirror, err = readapi.NewMirror(docs, m.Logger.With("role", roleAPI))
	if err != nil {
		return err
	}
	m.Mirror.SetClock(m.Clock.Unix)
	m.node.OnReconnect(mc, m.Mirror.Rewatch)
	m.loops.Go("mirror", m.Mirror.Run)
	m.loops.Go("mirror generations", func(ctx context.Context) error { return m.gens.watch.Follow(ctx, mjs, m.Mirror, g.Served()) })
	// A rebuild removes the old generation once no read node serves it: each says which it serves.
	if err := generation.AnswerServed(mc, func() string { return m.Mirror.Bucket().Bucket() }); err != nil {
		return fmt.Errorf("read api: %w", err)
	}
	return nil
}

// awaitMirror returns once the mirror holds what the bucket holds; before that every answer would
// be a 404. A large bucket on a busy node (a restart across midnight) can take a while: it waits,
// saying so.
func (m *Main) awaitMirror(ctx context.Context) error {
	waited := time.Now()
	for {
		t := time.NewTimer(30 * time.Second)
		select {
		case <-m.Mirror.Ready():
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("read api: documents mirror not caught up: %w", ctx.Err())
		case <-t.C:
			m.Logger.Warn("read api: the documents mirror is still catching up", "waited", time.Since(waited).Round(time.Second))
		}
	}
}

// serveAPI has the read API answer on its listener, in place of the starting handler.
func (m *Main) serveAPI(ctx context.Context, mc *nats.Conn, mjs jetstream.JetStream, files *events.Files) error {
	c := &m.Config
	metrics, err := m.metrics.ReadAPI()
	if err != nil {
		return err
	}
	lag, err := telemetry.NewLag(ctx, mjs, m.Mirror)
	if err != nil {
		return err
	}
	m.mirrorLag = lag
	lag.Stalled = func() {
		m.Logger.Warn("read api: the documents mirror applies nothing while behind its bucket; watching again", "role", roleAPI)
		m.Mirror.Rewatch()
	}
	m.metrics.Mirror(m.Mirror, lag)
	m.loops.Go("mirror lag", lag.Run)
	srv, err := readapi.New(readapi.Config{
		Mirror: m.Mirror, Logger: m.Logger.With("role", roleAPI), Metrics: metrics,
		Behind: lag.Behind, MaxLag: c.ReadyMaxLag, Degraded: m.Degraded,
		KeyQuota: c.KeyQuota, IPQuota: c.IPQuota, RedirectQuota: c.RedirectQuota, Window: c.QuotaWindow,
		TrustedProxies: c.TrustedProxies, ProxiedClientRequests: m.listeners.Budget().PerClient, AccessLog: c.AccessLog,
		Files: fileSource{files}, FileCacheBytes: c.FileCacheBytes, FileDescriptors: m.listeners.Budget().Files,
	})
	if err != nil {
		return err
	}
	// Read nodes on a cluster share their quotas: behind a balancer, a client gets its quota
	// across all of them.
	if m.NATS == nil && c.QuotaShareEvery >= 0 {
		m.loops.Go("quota sharing", func(ctx context.Context) error { return srv.ShareQuotas(ctx, mc, c.QuotaShareEvery) })
	}
	// Each read node reports the use of each key, which the admin role shows.
	m.loops.Go("usage reports", func(ctx context.Context) error { return srv.ReportUsage(ctx, mc, 0) })
	m.listeners.ServeAPI(srv.Handler())
	return nil
}

// fileSource serves the read API the uploaded files of the object store.
type fileSource struct{ files *events.Files }

func (s fileSource) Open(ctx context.Context, name string) (readapi.StoredFile, error) {
	fi, err := s.files.Stat(ctx, name)
	if errors.Is(err, events.ErrFileNotFound) {
		return readapi.StoredFile{}, readapi.ErrNoFile
	}
	if err != nil {
		return readapi.StoredFile{}, err
	}
	return readapi.StoredFile{ContentType: fi.ContentType, Size: fi.Size, Reader: func(ctx context.Context, skip int64) io.Reader {
		return s.files.Reader(ctx, fi, skip)
	}}, nil
}
