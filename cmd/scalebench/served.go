package main

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// servedWatch reads a set of establishments through the read API in rounds, one after the other,
// and keeps for each the first revision it read and since when it reads the latest one: what a
// client polling them would have seen of a day change.
type servedWatch struct {
	svc       *service
	all       []keyed
	first     []int64
	latest    []int64
	since     []time.Time // when latest was first read
	rounds    int
	took      time.Duration // the longest round
	firstRead time.Time     // when the first round ended: every first revision read by then

	stop chan struct{}
	done chan error
}

// watchServed starts reading the establishments of all, in rounds, until stop; they must be
// served.
func (s *service) watchServed(ctx context.Context, all []keyed) *servedWatch {
	w := &servedWatch{svc: s, all: all, first: make([]int64, len(all)), latest: make([]int64, len(all)),
		since: make([]time.Time, len(all)), stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { w.done <- w.run(ctx) }()
	return w
}

func (w *servedWatch) run(ctx context.Context) error {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	stopping := false
	for {
		select {
		case <-w.stop:
			stopping = true
		default:
		}
		start := time.Now()
		err := parallelN(32, len(w.all), func(i int) error {
			rev, err := w.svc.revision(ctx, client, w.all[i].slug, w.all[i].key)
			if err != nil {
				return err
			}
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if w.rounds == 0 {
				w.first[i] = rev
			}
			if w.rounds == 0 || rev != w.latest[i] {
				w.latest[i], w.since[i] = rev, at
			}
			return nil
		})
		if err != nil {
			return err
		}
		if w.rounds == 0 {
			w.firstRead = time.Now()
		}
		w.rounds++
		w.took = max(w.took, time.Since(start))
		// The round that saw the stop has begun before it: one more ends after it.
		if stopping {
			return nil
		}
	}
}

// end stops the rounds once one has begun after this call, and returns for the establishments
// whose latest revision is not their first, how long after at each was first read at it, in
// increasing order; early counts those read at it before at.
func (w *servedWatch) end(at time.Time) (after []time.Duration, early int, err error) {
	close(w.stop)
	if err := <-w.done; err != nil {
		return nil, 0, err
	}
	for i := range w.all {
		if w.latest[i] == w.first[i] {
			continue
		}
		if w.since[i].Before(at) {
			early++
		}
		after = append(after, w.since[i].Sub(at))
	}
	slices.Sort(after)
	return after, early, nil
}
