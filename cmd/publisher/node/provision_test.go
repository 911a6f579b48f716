package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// externalNode is a node on an external NATS as Provision sees it, recording what it says it
// waits for.
func externalNode(waits *[]string) *Node {
	return &Node{cfg: Config{URL: "nats://127.0.0.1:4222", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Waiting: func(what string) { *waits = append(*waits, what) }}}
}

// TestProvisionWaitsWhileNATSIsAway: an attempt that fails for now is made again, the process
// saying what it waits for until it succeeds; a refusal waiting cannot mend ends it at once, and
// so does the end of its context.
func TestProvisionWaitsWhileNATSIsAway(t *testing.T) {
	t.Run("passing failures", func(t *testing.T) {
		var waits []string
		n := externalNode(&waits)
		attempts := 0
		got, err := Opened(t.Context(), n.Provision, "the bucket", func(context.Context) (int, error) {
			if attempts++; attempts < 3 {
				return 0, errors.New("no meta leader yet")
			}
			return 42, nil
		})
		if err != nil || got != 42 || attempts != 3 {
			t.Errorf("got %d, %v after %d attempts, want 42 after 3", got, err, attempts)
		}
		if want := []string{"the bucket", "the bucket", ""}; !slices.Equal(waits, want) {
			t.Errorf("waiting for %q, want %q", waits, want)
		}
	})
	for name, refusal := range map[string]error{
		"closed connection":  nats.ErrConnectionClosed,
		"replicas refused":   &jetstream.APIError{ErrorCode: 10074},
		"jetstream disabled": &jetstream.APIError{ErrorCode: jetstream.JSErrCodeJetStreamNotEnabledForAccount},
	} {
		t.Run(name, func(t *testing.T) {
			var waits []string
			attempts := 0
			err := externalNode(&waits).Provision(t.Context(), "the stream", func(context.Context) error {
				attempts++
				return refusal
			})
			if !errors.Is(err, refusal) || attempts != 1 || len(waits) != 0 {
				t.Errorf("got %v after %d attempts, waiting for %q; want %v at once", err, attempts, waits, refusal)
			}
		})
	}
	t.Run("context ends", func(t *testing.T) {
		var waits []string
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err := externalNode(&waits).Provision(ctx, "the stream", func(context.Context) error { return errors.New("no leader") })
		if err == nil || !strings.Contains(err.Error(), "gave up: "+context.DeadlineExceeded.Error()) {
			t.Errorf("got %v, want it given up once the context ended", err)
		}
		if want := []string{"the stream"}; len(waits) == 0 || waits[0] != want[0] {
			t.Errorf("waiting for %q, want %q first", waits, want)
		}
	})
}
