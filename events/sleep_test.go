package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
)

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := events.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context = %v, want context.Canceled", err)
	}
	if err := events.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on an ended context = %v, want context.Canceled", err)
	}
	if err := events.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep of 1ms = %v, want nil", err)
	}
	if err := events.Sleep(context.Background(), -time.Second); err != nil {
		t.Fatalf("Sleep of a negative duration = %v, want nil", err)
	}
}
