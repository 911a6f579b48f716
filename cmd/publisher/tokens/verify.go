package tokens

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// idForm is the form of a token's id.
var idForm = regexp.MustCompile(`^tok_[0-9a-f]{32}$`)

// Verify returns the token bearer is, and whether it is one: a token of this store, neither
// revoked nor expired, whose secret matches. An error says the store could not be read.
func (s *Store) Verify(ctx context.Context, bearer string) (Token, bool, error) {
	id, secret, ok := strings.Cut(bearer, ".")
	if !ok || !idForm.MatchString(id) || secret == "" {
		return Token{}, false, nil
	}
	rec, found := s.cache.Get(id)
	if !found {
		if _, gone := s.unknown.Get(id); gone {
			return Token{}, false, nil
		}
		seen := s.changes.Load()
		r, err := s.get(ctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			s.unknown.Add(id, struct{}{})
			return Token{}, false, nil
		}
		if err != nil {
			return Token{}, false, err
		}
		rec = r
		if s.changes.Load() == seen { // else a revocation may have come after the read
			s.cache.Add(id, rec)
		}
	}
	if subtle.ConstantTimeCompare([]byte(app.SecretDigest(secret)), []byte(rec.Hash)) != 1 || !s.now().Before(rec.ExpiresAt) {
		return Token{}, false, nil
	}
	return rec.Token, true, nil
}

// Get returns token id.
func (s *Store) Get(ctx context.Context, id string) (Token, error) {
	rec, err := s.get(ctx, id)
	if err != nil {
		return Token{}, err
	}
	return s.listed(rec.Token), nil
}

// List returns every token the bucket holds, the newest first, expired ones included until they
// are dropped. It reads the bucket in one pass.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("%w: tokens: list: %w", app.ErrUnavailable, err)
	}
	defer func() { _ = w.Stop() }()
	out := []Token{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: tokens: list: %w", app.ErrUnavailable, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("%w: tokens: list: the watch ended", app.ErrUnavailable)
			}
			if e == nil { // every current token is listed
				slices.SortFunc(out, func(a, b Token) int { return b.CreatedAt.Compare(a.CreatedAt) })
				return out, nil
			}
			var rec record
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				return nil, fmt.Errorf("tokens: record %s: %w", e.Key(), err)
			}
			out = append(out, s.listed(rec.Token))
		}
	}
}

// Revoke deletes token id: it is refused from now on.
func (s *Store) Revoke(ctx context.Context, id string) error {
	if _, err := s.get(ctx, id); err != nil {
		return err
	}
	// The purge's marker goes after an hour, time enough for every watch to see it.
	if err := s.kv.Purge(ctx, id, jetstream.PurgeTTL(markerTTL)); err != nil {
		return fmt.Errorf("%w: tokens: revoke %s: %w", app.ErrUnavailable, id, err)
	}
	s.cache.Remove(id)
	return nil
}

// listed is t as listed now.
func (s *Store) listed(t Token) Token {
	t.Expired = !s.now().Before(t.ExpiresAt)
	return t
}

// get reads the record of token id.
func (s *Store) get(ctx context.Context, id string) (record, error) {
	if !idForm.MatchString(id) {
		return record{}, fmt.Errorf("token %q: %w", id, domain.ErrNotFound)
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return record{}, fmt.Errorf("token %q: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return record{}, fmt.Errorf("%w: tokens: read %s: %w", app.ErrUnavailable, id, err)
	}
	var rec record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return record{}, fmt.Errorf("tokens: record %s: %w", id, err)
	}
	return rec, nil
}

// count returns how many tokens the bucket holds, with the markers of those revoked or dropped
// within the hour.
func (s *Store) count(ctx context.Context) (int, error) {
	st, err := s.kv.Status(ctx)
	if err != nil {
		return 0, err
	}
	return int(st.Values()), nil
}
