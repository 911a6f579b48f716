package generation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
)

// testLeases starts a NATS server and opens its leases bucket.
func testLeases(tb testing.TB) jetstream.KeyValue {
	tb.Helper()
	js, err := jetstream.New(natstest.Connect(tb, natstest.Start(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	leases, err := OpenLeases(tb.Context(), js, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return leases
}

// slowUpdates answers each Update of its bucket delay late, as a server short of CPU does.
type slowUpdates struct {
	jetstream.KeyValue
	delay time.Duration
}

func (s slowUpdates) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.KeyValue.Update(ctx, key, value, last)
}

// TestLeaseKeptWhileRenewalsAreSlow: a holder whose renewals are answered later than it renews,
// but well within half the lease, keeps its lease; one whose renewals are never answered gives
// it up at half the lease.
func TestLeaseKeptWhileRenewalsAreSlow(t *testing.T) {
	t.Parallel()
	leases := testLeases(t)
	keep := func(name string, delay, runFor time.Duration) error {
		l, other, err := tryLease(t.Context(), leases, name, "holder")
		if err != nil || l == nil {
			t.Fatalf("take %s: %v (held by %q)", name, err, other)
		}
		l.kv = slowUpdates{KeyValue: leases, delay: delay}
		ctx, cancel := context.WithTimeout(t.Context(), runFor)
		defer cancel()
		return l.keep(ctx)
	}
	// Answers 1.5 s late, every renewal 0.5 s past the renewal period, for longer than half the
	// lease.
	if err := keep("slow", LeaseRenew*3/2, LeaseTTL/2+2*time.Second); err != nil {
		t.Errorf("renewals answered late: %v, want the lease kept", err)
	}
	if err := keep("silent", LeaseTTL, LeaseTTL); !errors.Is(err, errLeaseLost) {
		t.Errorf("renewals never answered: %v, want errLeaseLost", err)
	}
}

// TestOwnLeftLeaseIsTakenAtOnce: a lease that still names the process waiting for it (given up
// when its renewals failed, no work running under it) is taken at once, not after it expires;
// one naming another process is not.
func TestOwnLeftLeaseIsTakenAtOnce(t *testing.T) {
	leases := testLeases(t)
	if _, err := leases.Create(t.Context(), ProjectorLease, []byte("this-process")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), LeaseTTL/2)
	defer cancel()
	l, err := waitLease(ctx, leases, ProjectorLease, "this-process", leasePoll, nil)
	if err != nil || l == nil {
		t.Fatalf("a lease left by this process: %v, want it taken before it expires", err)
	}
	l.release(t.Context())

	if _, err := leases.Create(t.Context(), ProjectorLease, []byte("another-process")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 2*leasePoll)
	defer cancel()
	if l, err := waitLease(ctx, leases, ProjectorLease, "this-process", leasePoll, nil); l != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("another process's lease: got %v, %v, want it left alone", l, err)
	}
}
