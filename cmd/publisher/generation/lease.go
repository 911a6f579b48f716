package generation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/events"
)

// LeasesBucket holds the leases.
const LeasesBucket = "LEASES"

const (
	// LeaseTTL is how long a lease outlives its last renewal: the longest a role's work stops
	// when the process holding it dies. Its holder gives up at half of it, leaving the other half
	// for its work to stop before another may start.
	LeaseTTL = 10 * time.Second
	// LeaseRenew is how often the holder renews its lease; leasePoll how often the others try
	// to take it.
	LeaseRenew = 1 * time.Second
	leasePoll  = 1 * time.Second
)

// errLeaseLost ends a role whose lease another process took.
var errLeaseLost = errors.New("lease lost")

// errOwnLeaseStuck is why a process cannot take a lease that still names it: it could not remove
// it, its store not writing.
var errOwnLeaseStuck = errors.New("the lease left by this process cannot be removed")

// lease is a key of the leases bucket that one holder holds while it renews it.
type lease struct {
	kv     jetstream.KeyValue
	name   string
	holder string
	rev    uint64
	taken  time.Time // when the request that took it was sent
	// lastErr is the last renewal's failure, for the message of a lease given up.
	lastErr error
}

// OpenLeases creates the leases bucket, or updates it to this configuration.
func OpenLeases(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeasesBucket,
		Description: "Which process runs each role that one process at a time runs.",
		History:     1,
		TTL:         LeaseTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
}

// tryLease takes the lease name for holder when no one holds it; else it returns who does.
func tryLease(ctx context.Context, kv jetstream.KeyValue, name, holder string) (*lease, string, error) {
	sent := time.Now()
	rev, err := kv.Create(ctx, name, []byte(holder))
	if err == nil {
		return &lease{kv: kv, name: name, holder: holder, rev: rev, taken: sent}, "", nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, "", err
	}
	if e, err := kv.Get(ctx, name); err == nil {
		return nil, string(e.Value()), nil
	}
	return nil, "another process", nil
}

// waitLease returns the lease name once holder has it, trying every poll, or fails when ctx
// ends; notTaken, unless nil, hears of each attempt that failed: the holder found, or the error.
func waitLease(ctx context.Context, kv jetstream.KeyValue, name, holder string, poll time.Duration, notTaken func(other string, err error)) (*lease, error) {
	for {
		l, other, err := tryLease(ctx, kv, name, holder)
		if l != nil {
			return l, nil
		}
		if other == holder {
			if dropOwnLease(ctx, kv, name, holder) {
				continue
			}
			// A lease of this process's that cannot be removed: the store does not write.
			other, err = "", errOwnLeaseStuck
		}
		if notTaken != nil {
			notTaken(other, err)
		}
		if err := events.Sleep(ctx, poll); err != nil {
			return nil, err
		}
	}
}

// dropOwnLease removes a lease that still names holder, which waits for it: a lease its holder
// gave up when its renewals failed (its server short of room, or slow), and that no work runs
// under any more. Waiting for it to expire would stop the role for its whole term for nothing.
func dropOwnLease(ctx context.Context, kv jetstream.KeyValue, name, holder string) bool {
	e, err := kv.Get(ctx, name)
	if err != nil || string(e.Value()) != holder {
		return false
	}
	return kv.Delete(ctx, name, jetstream.LastRevision(e.Revision())) == nil
}

// keep renews l until ctx ends, and returns errLeaseLost once it could not for longer than the
// lease lasts, or another process holds it.
func (l *lease) keep(ctx context.Context) error {
	last := l.taken // when the last write of the lease that succeeded was sent
	t := time.NewTicker(LeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Let a standby take over at once rather than when the lease expires.
			l.release(ctx)
			return nil
		case <-t.C:
		}
		// No attempt may end past half the lease: the other half is left for the work to stop
		// before another process may take it. Until then, an attempt takes as long as the server
		// does: a server slow to answer (a node short of CPU or memory) does not make a holder
		// give up a lease it still holds.
		left := LeaseTTL/2 - time.Since(last)
		if left < LeaseRenew/10 {
			return fmt.Errorf("%w: not renewed for %s: %v", errLeaseLost, time.Since(last).Round(time.Millisecond), l.lastErr)
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, left)
		rev, err := l.renew(rctx)
		cancel()
		if errors.Is(err, errLeaseLost) {
			return err
		}
		if err == nil {
			l.rev, last = rev, sent
			continue
		}
		l.lastErr = err
	}
}

// renew writes the lease again, from the revision it was last written at.
func (l *lease) renew(ctx context.Context) (uint64, error) {
	rev, err := l.kv.Update(ctx, l.name, []byte(l.holder), l.rev)
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return rev, err
	}
	// A renewal whose answer was lost may have been applied: the lease is still ours if it names
	// this holder, and a renewal from the revision read proves it.
	e, gerr := l.kv.Get(ctx, l.name)
	switch {
	case gerr == nil && string(e.Value()) == l.holder:
		return l.kv.Update(ctx, l.name, []byte(l.holder), e.Revision())
	case gerr == nil || errors.Is(gerr, jetstream.ErrKeyNotFound):
		return 0, fmt.Errorf("%w: another process holds it", errLeaseLost)
	}
	return rev, err
}

// release gives the lease up at once, for another process to take it.
func (l *lease) release(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = l.kv.Delete(dctx, l.name, jetstream.LastRevision(l.rev))
}

// heldLease is a lease kept in the background while the work it guards runs.
type heldLease struct {
	kept chan error // receives what keep returned: nil once stopped, or why the lease was lost
	stop context.CancelFunc
}

// hold keeps l in the background, with ctx's values but not its end, until release; onLost,
// unless nil, is called when the lease is lost.
func (l *lease) hold(ctx context.Context, onLost func(error)) *heldLease {
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &heldLease{kept: make(chan error, 1), stop: stop}
	go func() {
		err := l.keep(kctx)
		if err != nil && onLost != nil {
			onLost(err)
		}
		h.kept <- err
	}()
	return h
}

// release stops keeping the lease, which gives it up, and returns why it was lost before, nil
// when it was not.
func (h *heldLease) release() error {
	h.stop()
	err := <-h.kept
	h.kept <- err // a second release returns the same
	return err
}

// lost returns why the lease was lost, nil while it is kept.
func (h *heldLease) lost() error {
	select {
	case err := <-h.kept:
		h.kept <- err
		return err
	default:
		return nil
	}
}

// Leased runs run while holder holds the lease name in the leases bucket kv, taking the lease
// again whenever it is lost, until ctx ends: one process at a time runs it. run's context ends
// when the lease is lost; run returns then.
func Leased(ctx context.Context, kv jetstream.KeyValue, name, holder string, run func(context.Context) error) error {
	for {
		l, err := waitLease(ctx, kv, name, holder, leasePoll, nil)
		if err != nil {
			return nil // ctx ended
		}
		wctx, stop := context.WithCancel(ctx)
		held := l.hold(ctx, func(error) { stop() })
		err = run(wctx)
		stop()
		lost := held.release()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && lost == nil {
			return err
		}
	}
}
