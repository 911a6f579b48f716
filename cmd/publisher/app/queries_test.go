package app

import (
	"errors"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events/natstest"
)

// HoldsKey is true for the current key of an establishment whose API is on, and for no other:
// not a key regenerated since, not any key once the API is off.
func TestHoldsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	var first KeyResult
	var slug domain.Slug
	for i := 0; first.APIKey == ""; i++ {
		s := establishment(i)
		slug, first = domain.Slug(s.Slug), mustImport(t, c, s)
	}
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
