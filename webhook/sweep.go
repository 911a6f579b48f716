package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SweepReport says what a sweep of the signing secrets did.
type SweepReport struct {
	Endpoints   int `json:"endpoints"`
	Sealed      int `json:"sealed"`      // secrets stored in clear, now sealed
	Reencrypted int `json:"reencrypted"` // data keys encrypted again under the first master key
	Pruned      int `json:"pruned"`      // rotated-out secrets past their grace, dropped and erased
	Erased      int `json:"erased"`      // data keys no endpoint uses, erased
	// Remaining counts the secrets still not under the first master key: an older master key
	// can be dropped once a sweep reports none.
	Remaining int `json:"remaining"`
	Failed    int `json:"failed"` // endpoints the sweep could not finish, retried at the next
}

// orphanAge is how old a data key no endpoint uses must be before a sweep erases it: a key is
// stored a moment before the record that uses it.
const orphanAge = 10 * time.Minute

// Sweep brings every stored signing secret to its intended state: a secret stored in clear
// (before secrets were encrypted) is sealed under a data key of its own; a data key encrypted
// with an older master key is encrypted again under the first, its previous message erased; a
// rotated-out secret past its grace is dropped and its data key erased; and a data key no
// endpoint uses (left by a change whose outcome was unknown, or a failed erasure) is erased. An
// endpoint it cannot finish is counted and left for the next sweep.
func (r *Registry) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	keys, err := r.endpointKeys(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep secrets: %w", err)
	}
	used := make(map[string]bool)
	now := r.d.cfg.Now().UTC()
	for _, key := range keys {
		r.sweepEndpoint(ctx, key, now, used, &rep)
	}
	// Orphans only when every record was read: the keys of one that was not would look unused.
	if rep.Failed > 0 || ctx.Err() != nil {
		return rep, nil
	}
	status, err := r.d.endpoints.Status(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep secrets: %w", err)
	}
	if uint64(len(keys)) < status.Values() {
		// The listing ended early (or the bucket holds delete marks, which nothing here writes):
		// records may have been passed over.
		rep.Failed++
		return rep, nil
	}
	erased, err := r.d.vault.eraseOrphans(ctx, used, now.Add(-orphanAge))
	rep.Erased = erased
	if err != nil {
		return rep, fmt.Errorf("sweep secrets: %w", err)
	}
	return rep, nil
}

// endpointKeys lists the keys of the endpoint bucket, each once.
func (r *Registry) endpointKeys(ctx context.Context) ([]string, error) {
	lister, err := r.d.endpoints.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	seen := map[string]bool{} // a key written during the listing can be listed twice
	for k := range lister.Keys() {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// sweepEndpoint sweeps the secrets of the endpoint stored under key, counting what it did in rep
// and the data keys the endpoint uses in used.
func (r *Registry) sweepEndpoint(ctx context.Context, key string, now time.Time, used map[string]bool, rep *SweepReport) {
	rec, _, err := r.d.getEndpoint(ctx, key)
	if errors.Is(err, ErrEndpointNotFound) {
		return
	}
	rep.Endpoints++
	if err != nil {
		rep.Failed++
		return
	}
	failed := !r.rewrapSecrets(ctx, rec, used, rep)
	if !r.sealAndPrune(ctx, key, now, used, rep) {
		failed = true
	}
	if failed {
		rep.Failed++
	}
}

// rewrapSecrets encrypts the data keys of rec's sealed secrets again under the first master key
// where an older one encrypted them; it reports false when one could not be.
func (r *Registry) rewrapSecrets(ctx context.Context, rec *endpointRecord, used map[string]bool, rep *SweepReport) bool {
	ok := true
	for _, s := range rec.Secrets {
		if s.DataKey == "" {
			continue
		}
		used[s.DataKey] = true
		done, err := r.d.vault.rewrap(ctx, s.DataKey)
		switch {
		case err != nil:
			ok = false
			rep.Remaining++
		case done:
			rep.Reencrypted++
		}
	}
	return ok
}

// sealAndPrune seals the secrets of the endpoint under key stored in clear and drops those past
// their grace, erasing their data keys once the record no longer names them; it reports false
// when the record could not be changed.
func (r *Registry) sealAndPrune(ctx context.Context, key string, now time.Time, used map[string]bool, rep *SweepReport) bool {
	var made, dropped []string
	var sealed, pruned int
	err := r.change(ctx, key, false, func(rec *endpointRecord) error {
		made, dropped, sealed, pruned = made[:0], dropped[:0], 0, 0
		var keep []signingSecret
		for _, s := range rec.Secrets {
			if !s.Until.IsZero() && !s.Until.After(now) {
				pruned++
				dropped = append(dropped, s.DataKey)
				continue
			}
			if s.DataKey == "" {
				ns, err := r.d.vault.seal(ctx, key, s.Value)
				if err != nil {
					return fmt.Errorf("%w: %w", errSeal, err)
				}
				made = append(made, ns.DataKey)
				ns.Until = s.Until
				s = ns
				sealed++
			}
			keep = append(keep, s)
		}
		if sealed == 0 && pruned == 0 {
			return errUnchanged
		}
		rec.Secrets = keep
		return nil
	})
	if err != nil {
		if definitelyNotWritten(err) {
			r.erase(ctx, made)
		}
		return false
	}
	r.erase(ctx, dropped)
	for _, k := range made {
		used[k] = true
	}
	rep.Sealed += sealed
	rep.Pruned += pruned
	return true
}
