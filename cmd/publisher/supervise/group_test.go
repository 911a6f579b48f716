package supervise

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSuperviseStartsAFailingLoopAgain: a loop that fails, or panics, is started again after a
// pause that doubles, reported degraded meanwhile, and no longer once it has run HealthyAfter.
func TestSuperviseStartsAFailingLoopAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
		var runs atomic.Int32
		var starts []time.Duration
		begin := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.supervise(ctx, "clock", func(ctx context.Context) error {
				starts = append(starts, time.Since(begin))
				switch runs.Add(1) {
				case 1:
					return errors.New("index: no responders")
				case 2:
					panic("a bug")
				}
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(500 * time.Millisecond) // within the first pause, of 1 s
		synctest.Wait()
		if got := g.Degraded(); len(got) != 1 || !strings.HasPrefix(got[0], "clock (since ") || !strings.Contains(got[0], "1 failures in a row") {
			t.Errorf("after one failure: got %q, want the clock degraded once", got)
		}
		time.Sleep(3 * time.Second) // past the second pause, of 2 s, after the panic at 1 s
		synctest.Wait()
		if got := runs.Load(); got != 3 {
			t.Fatalf("runs after a failure and a panic: got %d, want 3", got)
		}
		if want := []time.Duration{0, time.Second, 3 * time.Second}; len(starts) != 3 || starts[1] != want[1] || starts[2] != want[2] {
			t.Errorf("starts: got %v, want %v", starts, want)
		}
		if d := g.Snapshot()["clock"]; d.Failures != 2 || !strings.Contains(d.Err, "panic: a bug") {
			t.Errorf("the panic: got %+v, want the second failure with the panic", d)
		}
		time.Sleep(HealthyAfter)
		synctest.Wait()
		if got := g.Degraded(); len(got) != 0 {
			t.Errorf("after running %s: got %q, want nothing degraded", HealthyAfter, got)
		}
		cancel()
		<-done
	})
}

// TestSuperviseLeavesALoopsOwnReport: a loop that reports its own state under its name keeps it:
// supervise clears only the failures it recorded.
func TestSuperviseLeavesALoopsOwnReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.supervise(ctx, "projector", func(ctx context.Context) error {
				g.Fail("projector", errors.New("lease not taken"))
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(2 * HealthyAfter)
		synctest.Wait()
		if got := g.Degraded(); len(got) != 1 {
			t.Errorf("got %q, want the projector's own report kept", got)
		}
		cancel()
		<-done
	})
}
