package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/opencarte/publisher/events"
)

// A failing role never stops the others: each loop of the process runs under supervise, which
// starts it again after a pause when it fails, and the read API keeps answering from memory
// meanwhile. The process exits only on a signal, or when it cannot start.
const (
	restartPause    = time.Second      // the first pause before a failed loop starts again
	restartMaxPause = 30 * time.Second // the pause doubles up to this
	// healthyAfter is how long a loop started again runs without failing before it is no longer
	// reported degraded.
	healthyAfter = 30 * time.Second
)

// health holds what is degraded in the process: a loop that failed and is started again, the
// projector standing by because it cannot take its lease, storage refusing writes. /readyz and the
// admin status report it.
type health struct {
	mu       sync.Mutex
	degraded map[string]degradation
}

// degradation is one degraded part of the process.
type degradation struct {
	Since    time.Time `json:"since"`    // its first failure in a row
	Err      string    `json:"error"`    // its last failure
	Failures int       `json:"failures"` // in a row
}

// Fail records that part failed with err.
func (h *health) Fail(part string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.degraded == nil {
		h.degraded = make(map[string]degradation)
	}
	d, ok := h.degraded[part]
	if !ok {
		d.Since = time.Now().UTC()
	}
	d.Err, d.Failures = err.Error(), d.Failures+1
	h.degraded[part] = d
}

// Recovered records that part works again.
func (h *health) Recovered(part string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.degraded, part)
}

// report returns one line per degraded part, sorted: "part (since ..., n failures in a row)".
// It is what /readyz, which needs no credential, says: the errors themselves, which name streams,
// hosts and processes, are for the admin status.
func (h *health) report() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.degraded))
	for part, d := range h.degraded {
		out = append(out, fmt.Sprintf("%s (since %s, %d failures in a row)", part, d.Since.Format(time.RFC3339), d.Failures))
	}
	slices.Sort(out)
	return out
}

// snapshot returns the degraded parts by name.
func (h *health) snapshot() map[string]degradation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]degradation, len(h.degraded))
	for part, d := range h.degraded {
		out[part] = d
	}
	return out
}

// supervise runs fn until ctx ends. Each time fn fails, or panics, the failure is logged and
// recorded as degraded, and fn starts again after a pause (restartPause, doubling up to
// restartMaxPause); once it has run healthyAfter without failing, it is no longer degraded and the
// pause starts over. It clears only what it recorded: a loop may report its own state under its
// name meanwhile (the projector standing by, say).
func (m *Main) supervise(ctx context.Context, name string, fn func(context.Context) error) {
	pause := restartPause
	failed := false
	for ctx.Err() == nil {
		started := time.Now()
		var healthy *time.Timer
		if failed {
			healthy = time.AfterFunc(healthyAfter, func() { m.health.Recovered(name) })
		}
		err := runRecovered(ctx, fn)
		if healthy != nil {
			healthy.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			// A loop that returns before its end is asked for stopped working all the same.
			err = errors.New("stopped")
		}
		if time.Since(started) >= healthyAfter {
			pause = restartPause
		}
		failed = true
		m.health.Fail(name, err)
		m.Logger.Error("role failed; starting it again", "loop", name, "err", err, "in", pause)
		if events.Sleep(ctx, pause) != nil {
			return
		}
		pause = min(2*pause, restartMaxPause)
	}
}

// runRecovered runs fn, and returns a panic of its goroutine as an error with the stack.
func runRecovered(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return fn(ctx)
}
