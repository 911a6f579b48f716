package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/internal/sample"
)

// putClients is how many clients update establishments at once, as a platform's workers would.
const putClients = 16

// putAll updates o.puts establishments, each with its whole document through PUT
// /admin/v1/establishments/{slug} (its description changed, so that every document is rendered
// again), from putClients clients at once, and measures the service's CPU over the updates and
// the projection that follows.
func (b *bench) putAll(ctx context.Context) error {
	n := min(b.o.puts, b.o.n)
	if n == 0 {
		return nil
	}
	step("updating establishments through concurrent PUTs")
	bodies := make([][]byte, n)
	slugs := make([]string, n)
	for i := range n {
		s := sample.Establishment(b.o.seed, i, b.o.today)
		d := "Mis à jour. "
		if s.Description != nil {
			d += *s.Description
		}
		s.Description = &d
		data, err := json.Marshal(s)
		if err != nil {
			return err
		}
		bodies[i], slugs[i] = data, s.Slug
	}
	svc := b.svc
	pid := svc.cmd.Process.Pid
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: putClients}}
	var next atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	var sent int64
	cpu0, start := readCPU(pid), time.Now()
	var wg sync.WaitGroup
	for range putClients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				status := svc.adminStatus(ctx, client, http.MethodPut, svc.adminURL+"/admin/v1/establishments/"+slugs[i], bodies[i])
				mu.Lock()
				statuses[status]++
				sent += int64(len(bodies[i]))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	end := time.Now()
	caught, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	cpu := readCPU(pid) - cpu0
	took := end.Sub(start)
	rate := float64(n) / took.Seconds()
	b.r.add("concurrent PUT: %d establishments updated by %d clients (%d bytes each on average): %v in %s, %.0f/s (%.2f of raw appends); projection caught up %s after the last answer; service CPU %s: %.2f ms per establishment, the PUTs and their projection",
		n, putClients, sent/int64(n), statuses, took.Round(time.Millisecond), rate, rate/b.raw.cas, caught.Sub(end).Round(time.Millisecond),
		cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/float64(n))
	if statuses[http.StatusOK] != n {
		return fmt.Errorf("concurrent PUT: %v, want %d answered 200", statuses, n)
	}
	return nil
}
