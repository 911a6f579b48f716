package app

import (
	"context"
	"fmt"
	"slices"

	"github.com/opencarte/publisher/domain"
)

// State is what the admin API shows of an establishment: never the key or a secret.
type State struct {
	Establishment domain.Snapshot          `json:"establishment"`
	Webhooks      []domain.WebhookEndpoint `json:"webhook_endpoints"`
	Today         string                   `json:"today,omitempty"`
	Version       uint64                   `json:"version"`
}

// Get returns the current state of slug as the log has it, other writers' changes included. It
// reports domain.ErrNotFound for an unknown establishment.
func (c *Commands) Get(ctx context.Context, slug domain.Slug) (State, error) {
	defer c.locks.lock(slug)()
	a, err := c.repo.get(ctx, slug)
	if err != nil {
		return State{}, unavailable(err)
	}
	defer c.repo.put(a)
	if !a.est.Created {
		return State{}, fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound)
	}
	st := State{
		Establishment: a.est.Snapshot(),
		Webhooks:      slices.Clone(a.est.Webhooks),
		Version:       a.version,
	}
	if st.Webhooks == nil {
		st.Webhooks = []domain.WebhookEndpoint{}
	}
	if !a.est.Today.IsZero() {
		st.Today = a.est.Today.String()
	}
	return st, nil
}

// List returns the slugs of every establishment in the log, sorted.
func (c *Commands) List(ctx context.Context) ([]string, error) {
	slugs, err := c.log.Slugs(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	slices.Sort(slugs)
	return slugs, nil
}
