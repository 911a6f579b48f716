package app

import (
	"errors"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events/natstest"
)

// importWithKey imports the generated establishments in turn until one has its API on, and
// returns its slug and the key its import issued.
func importWithKey(t *testing.T, c *Commands) (domain.Slug, KeyResult) {
	t.Helper()
	for i := 0; ; i++ {
		s := establishment(i)
		if r := mustImport(t, c, s); r.APIKey != "" {
			return domain.Slug(s.Slug), r
		}
	}
}

// HoldsKey is true for the current key of an establishment whose API is on, and for no other:
// not a key regenerated since, not any key once the API is off.
func TestHoldsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	slug, first := importWithKey(t, c)
	holds := func(key domain.APIKey) bool {
		t.Helper()
		ok, err := c.HoldsKey(t.Context(), slug, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !holds(first.APIKey) {
		t.Error("the key the import issued: got false, want true")
	}
	second, err := c.RegenerateKey(t.Context(), Request{Slug: slug})
	if err != nil {
		t.Fatal(err)
	}
	if holds(first.APIKey) || !holds(second.APIKey) {
		t.Errorf("after a regeneration: got the old key %t, the new %t; want false, true", holds(first.APIKey), holds(second.APIKey))
	}
	if _, err := c.DisableAPI(t.Context(), Request{Slug: slug}); err != nil {
		t.Fatal(err)
	}
	if holds(second.APIKey) {
		t.Error("with the API off: got true, want false")
	}
	if _, err := c.HoldsKey(t.Context(), "nowhere", second.APIKey); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown establishment: got %v, want ErrNotFound", err)
	}
}

// KeyHash is the hash of the current key while the API is on: the issued key's, the regenerated
// one's, none once the API is off.
func TestKeyHash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	slug, issued := importWithKey(t, c)
	hash := func() string {
		t.Helper()
		h, err := c.KeyHash(t.Context(), slug)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if got := hash(); got != issued.APIKey.Hash() {
		t.Errorf("after the import: got %q, want the issued key's hash", got)
	}
	next, err := c.RegenerateKey(t.Context(), Request{Slug: slug})
	if err != nil {
		t.Fatal(err)
	}
	if got := hash(); got != next.APIKey.Hash() {
		t.Errorf("after a regeneration: got %q, want the new key's hash", got)
	}
	if _, err := c.DisableAPI(t.Context(), Request{Slug: slug}); err != nil {
		t.Fatal(err)
	}
	if got := hash(); got != "" {
		t.Errorf("with the API off: got %q, want none", got)
	}
	if _, err := c.KeyHash(t.Context(), "nowhere"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown establishment: got %v, want ErrNotFound", err)
	}
}
