package events

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, whichever comes first, and returns ctx.Err() in the
// second case. It is the pause of every loop that retries or polls the log, its buckets and the
// roles built on them.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
