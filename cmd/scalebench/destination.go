package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// A Kafka broker in this process (franz-go's kfake), a destination of the service on it, and a
// consumer that keeps what a platform would: every establishment's newest revision.

// kafkaPartitions is the partitions of the destination's topic.
const kafkaPartitions = 8

// destination is one destination on the Kafka broker and what its topic's consumer read.
type destination struct {
	id     string
	topic  string
	follow *brokertest.Follower
	state  *follower
	stop   context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	first, last time.Time // of the events read since the last take
	events      int
}

// startKafka starts the broker and registers a destination of every change from now on.
func (b *bench) startKafka(ctx context.Context) error {
	k, err := brokertest.NewKafka(filepath.Join(b.o.dir, "kafka"), kafkaPartitions, "menus", "menus-sync")
	if err != nil {
		return err
	}
	b.kafka = k
	b.dest, err = b.addDestination(ctx, "menus", "now")
	return err
}

// addDestination registers a Kafka destination on topic and starts reading the topic.
func (b *bench) addDestination(ctx context.Context, topic, start string) (*destination, error) {
	body := fmt.Sprintf(`{"type": "kafka", "brokers": [%q], "topic": %q, "start": %q}`, b.kafka.Brokers()[0], topic, start)
	answer, err := b.svc.adminCall(ctx, http.MethodPost, "/admin/v1/destinations", body, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	d := &destination{topic: topic, state: newFollower(), done: make(chan struct{})}
	if err := json.Unmarshal(answer, &struct {
		ID *string `json:"id"`
	}{&d.id}); err != nil {
		return nil, err
	}
	if d.follow, err = brokertest.Follow(b.kafka.Brokers(), topic); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = cancel
	go d.read(rctx)
	return d, nil
}

// read moves the records the consumer read into the state, every 50 ms.
func (d *destination) read(ctx context.Context) {
	defer close(d.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var changes []events.Change
		d.follow.Each(func(r brokertest.Record) {
			var c events.Change
			if json.Unmarshal(r.Value, &c) == nil {
				changes = append(changes, c)
			}
		})
		if len(changes) == 0 {
			continue
		}
		now := time.Now()
		d.state.receive(changes, 0, "")
		d.mu.Lock()
		if d.events == 0 {
			d.first = now
		}
		d.last, d.events = now, d.events+len(changes)
		d.mu.Unlock()
	}
}

// take returns the events read since the last call, and when the first and the last came.
func (d *destination) take() (n int, first, last time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, first, last = d.events, d.first, d.last
	d.events, d.first, d.last = 0, time.Time{}, time.Time{}
	d.state.take()
	return n, first, last
}

func (d *destination) close() {
	d.stop()
	<-d.done
	d.follow.Close()
}

// destinationFigures prints what the Kafka destination published since the last figures, against
// the last change signal, stored at at.
func (b *bench) destinationFigures(ctx context.Context, what string, at time.Time) {
	n, first, last := b.dest.take()
	status, _ := b.svc.adminCall(ctx, http.MethodGet, "/admin/v1/destinations/"+b.dest.id, "", http.StatusOK)
	var st struct {
		Published, Failures uint64
	}
	_ = json.Unmarshal(status, &st)
	b.r.add("kafka destination over %s: %d events read by the consumer, the first to the last in %s, the last %s after the last change signal was stored; %d published in all, %d failed attempts",
		what, n, last.Sub(first).Round(time.Millisecond), sinceText(last, at), st.Published, st.Failures)
}

// syncDestination registers a destination that starts with every establishment's state, and
// measures how fast it publishes them: the publication's own rate, against the raw replay.
func (b *bench) syncDestination(ctx context.Context) error {
	step("kafka destination: a first sync of every establishment")
	start := time.Now()
	d, err := b.addDestination(ctx, "menus-sync", "all")
	if err != nil {
		return err
	}
	defer d.close()
	deadline := time.Now().Add(10 * time.Minute)
	for d.state.count() < b.o.n {
		if time.Now().After(deadline) {
			return fmt.Errorf("kafka destination: a first sync read %d of %d establishments in 10 minutes", d.state.count(), b.o.n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	n, _, last := d.take()
	took := last.Sub(start)
	rate := float64(n) / took.Seconds()
	b.r.add("kafka destination, first sync: %d events for %d establishments read by the consumer %s after the registration: %.0f/s, %.2f of the raw replay rate (%.0f msg/s)",
		n, b.o.n, took.Round(time.Millisecond), rate, rate/b.raw.replay, b.raw.replay)
	_, err = b.svc.adminCall(ctx, http.MethodDelete, "/admin/v1/destinations/"+d.id, "", http.StatusNoContent)
	return err
}
