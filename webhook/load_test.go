package webhook_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
)

// BenchmarkTenThousandEstablishments changes 10,000 establishments, each with one endpoint,
// within one second on an embedded, file-backed NATS server, and measures how long after the
// first change every establishment has had its one delivery, with a 2 s window. Run it with
//
//	go test ./webhook -run '^$' -bench TenThousand -benchtime 1x
//
// Metrics: s/first-change (first change to last delivery), s/after-window (last delivery after
// the last change's window closed), heap MB at the peak and at rest (the whole process: the
// embedded server, the receiver and the dispatcher).
func BenchmarkTenThousandEstablishments(b *testing.B) {
	const (
		establishments = 10_000
		window         = 2 * time.Second
	)
	for range b.N {
		tenThousand(b, establishments, window)
	}
}

func tenThousand(b *testing.B, establishments int, window time.Duration) {
	b.StopTimer()
	var delivered atomic.Int64
	var mu sync.Mutex
	seen := make(map[string]int, establishments)
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p webhook.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[p.Data.Establishment]++
		mu.Unlock()
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(rcv.Certificate())

	srv := natstest.StartWith(b, natstest.Options(b.TempDir()))
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	d, err := webhook.Open(ctx, nc, webhook.Config{
		MasterKeys:      testMasterKeys(b),
		Window:          window,
		RootCAs:         pool,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	sigs, err := events.OpenSignals(ctx, nc, 1)
	if err != nil {
		b.Fatal(err)
	}
	slug := func(i int) string { return fmt.Sprintf("etab-%05d", i) }
	parallel(establishments, 16, func(i int) {
		if err := d.Registry().Register(ctx, slug(i), fmt.Sprintf("wh_%05d", i), rcv.URL+"/hook", secretA); err != nil {
			b.Error(err)
		}
	})
	waitFor(b, 30*time.Second, func() bool {
		s, err := d.Stats(ctx)
		return err == nil && s.Endpoints == establishments
	})

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse
	var peak atomic.Uint64
	sampling := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sampling:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()

	b.StartTimer()
	first := time.Now()
	parallel(establishments, 16, func(i int) {
		err := sigs.Publish(ctx, events.Signal{Establishment: slug(i), Revision: 1, Resources: []string{"hours", "menus"}})
		if err != nil {
			b.Error(err)
		}
	})
	last := time.Now()
	waitFor(b, 2*time.Minute, func() bool { return delivered.Load() >= int64(establishments) })
	end := time.Now()
	b.StopTimer()
	close(sampling)

	// Nothing more arrives: one delivery per establishment.
	time.Sleep(window + time.Second)
	mu.Lock()
	for i := range establishments {
		if n := seen[slug(i)]; n != 1 {
			b.Errorf("%s: %d deliveries, want 1", slug(i), n)
		}
	}
	mu.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(end.Sub(first).Seconds(), "s/first-change")
	b.ReportMetric(end.Sub(last.Add(window)).Seconds(), "s/after-window")
	b.ReportMetric(last.Sub(first).Seconds(), "s/publishing")
	b.ReportMetric(float64(baseline)/(1<<20), "MB-heap-before")
	b.ReportMetric(float64(peak.Load())/(1<<20), "MB-heap-peak")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap-after")
}

// parallel calls f(0) to f(n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, limit time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
