package supervise

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// Stop ends the loops' context and says whether they returned within the wait; Fatal reaches Err.
func TestStopWaitsForTheLoops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(slog.New(slog.DiscardHandler))
		g.Go("quick", func(ctx context.Context) error { <-ctx.Done(); return nil })
		synctest.Wait()
		if !g.Stop(time.Second) {
			t.Error("a loop that returns at once: got not stopped, want stopped")
		}
		g = New(slog.New(slog.DiscardHandler))
		g.Go("slow", func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Minute); return nil })
		synctest.Wait() // the loop runs, waiting for its end
		if g.Stop(time.Second) {
			t.Error("a loop that takes a minute: got stopped within a second, want not")
		}
		synctest.Wait()
		g.Fatal(errors.New("http 127.0.0.1:8080: closed"))
		if err := <-g.Err(); err == nil || err.Error() != "http 127.0.0.1:8080: closed" {
			t.Errorf("Err: got %v, want the failure reported", err)
		}
		time.Sleep(time.Minute) // let the slow loop return inside the bubble
	})
}
