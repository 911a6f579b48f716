package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/cmd/publisher/node"
)

// Roles whose work must be done by one process at a time run under a lease: a key of the bucket
// LEASES held by one process, which renews it; the others stand by and take it over once it is
// no longer renewed (the process died, or lost NATS). The projector is one: two projecting the
// same log would announce every change twice. The webhook dispatchers and the clocks need none:
// they share their work through durable consumers and conditional appends.

// LeasesBucket holds the leases.
const LeasesBucket = "LEASES"

const (
	// leaseTTL is how long a lease outlives its last renewal: the longest a role's work stops
	// when the process holding it dies. Its holder gives up at half of it, leaving the other half
	// for its work to stop before another may start.
	leaseTTL = 10 * time.Second
	// leaseRenew is how often the holder renews its lease; leasePoll how often the others try
	// to take it.
	leaseRenew = 1 * time.Second
	leasePoll  = 1 * time.Second
)

// errLeaseLost ends a role whose lease another process took.
var errLeaseLost = errors.New("lease lost")

// errOwnLeaseStuck is why a process cannot take a lease that still names it: it could not remove
// it, its store not writing.
var errOwnLeaseStuck = errors.New("the lease left by this process cannot be removed")

type lease struct {
	kv     jetstream.KeyValue
	name   string
	holder string
	rev    uint64
	taken  time.Time // when the request that took it was sent
	// lastErr is the last renewal's failure, for the message of a lease given up.
	lastErr error
}

func openLeases(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeasesBucket,
		Description: "Which process runs each role that one process at a time runs.",
		History:     1,
		TTL:         leaseTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
}

// tryLease takes the lease name for holder when no one holds it.
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

// awaitLease returns the lease name once holder has it, saying once that it stands by.
func (m *Main) awaitLease(ctx context.Context, kv jetstream.KeyValue, name, holder string) (*lease, error) {
	said := false
	l, err := waitLease(ctx, kv, name, holder, leasePoll, func(other string, err error) {
		if err != nil {
			// The lease cannot even be read or written (NATS away, its storage full): the role is
			// degraded until it can.
			m.health.fail(name, fmt.Errorf("lease not taken: %w", err))
			m.Logger.Debug("lease: not taken", "role", name, "err", err)
			return
		}
		// Another process runs the role: standing by is this process's part, not a fault.
		m.health.recovered(name)
		if !said {
			m.Logger.Info("standing by: another process runs the role", "role", name, "holder", other)
			said = true
		}
	})
	if l != nil && said {
		m.Logger.Info("lease taken over: this process now runs the role", "role", name)
	}
	return l, err
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
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
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
	t := time.NewTicker(leaseRenew)
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
		left := leaseTTL/2 - time.Since(last)
		if left < leaseRenew/10 {
			return fmt.Errorf("%w: not renewed for %s: %v", errLeaseLost, time.Since(last).Round(time.Millisecond), l.lastErr)
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, left)
		rev, err := l.kv.Update(rctx, l.name, []byte(l.holder), l.rev)
		if err != nil && (errors.Is(err, jetstream.ErrKeyExists) || node.HasCode(err, jetstream.JSErrCodeStreamWrongLastSequence)) {
			// A renewal whose answer was lost may have been applied: the lease is still ours if
			// it names this holder, and a renewal from the revision read proves it.
			if e, gerr := l.kv.Get(rctx, l.name); gerr == nil && string(e.Value()) == l.holder {
				rev, err = l.kv.Update(rctx, l.name, []byte(l.holder), e.Revision())
			} else if gerr == nil || errors.Is(gerr, jetstream.ErrKeyNotFound) {
				cancel()
				return fmt.Errorf("%w: another process holds it", errLeaseLost)
			}
		}
		cancel()
		if err == nil {
			l.rev, last = rev, sent
			continue
		}
		l.lastErr = err
	}
}

// release gives the lease up at once, for another process to take it.
func (l *lease) release(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = l.kv.Delete(dctx, l.name, jetstream.LastRevision(l.rev))
}
