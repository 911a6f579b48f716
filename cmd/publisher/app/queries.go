package app

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"

	"github.com/opencarte/publisher/domain"
)

// State is what the admin API shows of an establishment: never the key or a secret.
type State struct {
	Establishment domain.EstablishmentInput `json:"establishment"`
	Webhooks      []domain.WebhookEndpoint  `json:"webhook_endpoints"`
	Today         string                    `json:"today,omitempty"`
	Version       uint64                    `json:"version"`
}

// Get returns the current state of slug as the log has it, other writers' changes included, with
// the webhook endpoints the registry holds for it. It reports domain.ErrNotFound for an unknown
// establishment.
func (c *Commands) Get(ctx context.Context, slug domain.Slug) (State, error) {
	st, err := c.state(ctx, slug)
	if err != nil || c.webhooks == nil {
		return st, err
	}
	endpoints, err := c.webhooks.Endpoints(ctx, string(slug))
	if err != nil {
		return State{}, unavailable(err)
	}
	st.Webhooks = append(st.Webhooks, endpoints...)
	return st, nil
}

// state returns the current state of slug as the log has it, without its webhook endpoints.
func (c *Commands) state(ctx context.Context, slug domain.Slug) (State, error) {
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
		Establishment: a.est.Export(),
		Webhooks:      []domain.WebhookEndpoint{},
		Version:       a.version,
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

// HoldsKey says whether key opens the public API of establishment slug: its API is on and key is
// its current key. It reports domain.ErrNotFound for an unknown establishment.
func (c *Commands) HoldsKey(ctx context.Context, slug domain.Slug, key domain.APIKey) (bool, error) {
	var holds bool
	err := c.read(ctx, slug, func(est *domain.Establishment) {
		same := subtle.ConstantTimeCompare([]byte(est.APIKeyHash), []byte(key.Hash())) == 1
		holds = est.PublicAPIEnabled && same
	})
	return holds, err
}

// KeyHash returns the SHA-256 of the current API key of establishment slug in hex, what the read
// API checks keys against and counts their use by, or "" while its API is off. The key itself is
// never kept. It reports domain.ErrNotFound for an unknown establishment.
func (c *Commands) KeyHash(ctx context.Context, slug domain.Slug) (string, error) {
	var hash string
	err := c.read(ctx, slug, func(est *domain.Establishment) {
		if est.PublicAPIEnabled {
			hash = est.APIKeyHash
		}
	})
	return hash, err
}

// read calls fn with the current state of establishment slug, as the log has it, under its lock,
// or reports domain.ErrNotFound for an unknown establishment. fn must not keep est.
func (c *Commands) read(ctx context.Context, slug domain.Slug, fn func(est *domain.Establishment)) error {
	defer c.locks.lock(slug)()
	a, err := c.repo.get(ctx, slug)
	if err != nil {
		return unavailable(err)
	}
	defer c.repo.put(a)
	if !a.est.Created {
		return fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound)
	}
	fn(a.est)
	return nil
}
