package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rawRates are the ceilings: what JetStream itself does with messages of the size of the
// establishments' records, on the same machine, in the same run.
type rawRates struct {
	n, size            int
	cas, async, replay float64 // messages per second
}

// measureRaw starts a JetStream server in this process, storing in dir like the service's
// embedded one, and times three things on n messages of size bytes: appends to a subject each
// with the expected-last-sequence check (16 at a time, as an import runs them), asynchronous
// appends, and a replay with an ordered consumer.
func measureRaw(ctx context.Context, dir string, n, size int) (rawRates, error) {
	defer os.RemoveAll(dir)
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true, MaxPayload: 8 << 20,
	})
	if err != nil {
		return rawRates{}, err
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		return rawRates{}, fmt.Errorf("raw: nats server not ready")
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	nc, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		return rawRates{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return rawRates{}, err
	}
	data := make([]byte, size)
	_, _ = rand.Read(data)
	r := rawRates{n: n, size: size}
	cas, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CAS", Subjects: []string{"cas.*"}, Storage: jetstream.FileStorage})
	if err != nil {
		return r, err
	}
	if r.cas, err = rawAppend(ctx, js, n, data); err != nil {
		return r, err
	}
	if r.async, err = rawAppendAsync(ctx, js, n, data); err != nil {
		return r, err
	}
	if r.replay, err = rawReplay(ctx, cas, n); err != nil {
		return r, err
	}
	return r, nil
}

// rawAppend appends n messages of data to subjects of the stream CAS, one each, with the
// expected-last-sequence check, 16 at a time; it returns the messages appended per second.
func rawAppend(ctx context.Context, js jetstream.JetStream, n int, data []byte) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if _, err := js.Publish(ctx, fmt.Sprintf("cas.e%d", i), data, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	select {
	case err := <-errs:
		return rate, fmt.Errorf("raw append: %w", err)
	default:
	}
	return rate, nil
}

// rawAppendAsync appends n messages of data asynchronously to a stream of its own, ASYNC; it
// returns the messages acknowledged per second.
func rawAppendAsync(ctx context.Context, js jetstream.JetStream, n int, data []byte) (float64, error) {
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ASYNC", Subjects: []string{"async.*"}, Storage: jetstream.FileStorage}); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range n {
		for {
			_, err := js.PublishAsync(fmt.Sprintf("async.e%d", i), data)
			if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				// The window of unacknowledged messages stayed full: wait for it to drain.
				<-js.PublishAsyncComplete()
				continue
			}
			if err != nil {
				return 0, err
			}
			break
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		return 0, fmt.Errorf("raw asynchronous append: not acknowledged within 5 minutes")
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// rawReplay reads the n messages of stream with an ordered consumer; it returns the messages read
// per second.
func rawReplay(ctx context.Context, stream jetstream.Stream, n int) (float64, error) {
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return 0, err
	}
	it, err := cons.Messages()
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	start := time.Now()
	for range n {
		if _, err := it.Next(); err != nil {
			return 0, fmt.Errorf("raw replay: %w", err)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
