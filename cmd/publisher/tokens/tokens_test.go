package tokens_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/tokens"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events/natstest"
)

var start = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// clock is a fake clock the stores read.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock               { c := &clock{}; c.ns.Store(start.UnixNano()); return c }
func exists(_ context.Context, slug domain.Slug) error {
	if slug == "nowhere" {
		return fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound)
	}
	return nil
}

// open returns a store on its own connection to the server at url.
func open(t *testing.T, js jetstream.JetStream, c *clock, max int) *tokens.Store {
	t.Helper()
	s, err := tokens.Open(t.Context(), tokens.Config{JS: js, Exists: exists, Now: c.now, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jetStream(t *testing.T) (jetstream.JetStream, func() jetstream.JetStream) {
	srv := natstest.Start(t)
	another := func() jetstream.JetStream {
		js, err := jetstream.New(natstest.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	return another(), another
}

// TestTokenLifecycle creates a token, wants its secret to verify and nothing else to, wants it
// listed without its secret or hash, refused once expired, and refused on another process as soon
// as it is revoked, although that process had it in its cache.
func TestTokenLifecycle(t *testing.T) {
	js, another := jetStream(t)
	c := newClock()
	s := open(t, js, c, 0)
	other := open(t, another(), c, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watched := make(chan error, 1)
	go func() { watched <- other.Watch(ctx) }()

	creator := app.WithActor(t.Context(), app.Actor{ID: "admin", Name: "admin token"})
	made, err := s.Create(creator, tokens.Request{Name: "owner of chez-marie", Scope: tokens.Establishment, Establishments: []string{"chez-marie"}, ExpiresIn: "2h"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.Secret, made.ID+".") || made.CreatedBy.ID != "admin" || !made.ExpiresAt.Equal(start.Add(2*time.Hour)) {
		t.Fatalf("created %+v", made)
	}
	for _, bearer := range []string{made.Secret, made.Secret + "x", made.ID + ".", made.ID, "tok_00000000000000000000000000000000." + strings.SplitN(made.Secret, ".", 2)[1], ""} {
		tok, ok, err := other.Verify(t.Context(), bearer)
		if err != nil || ok != (bearer == made.Secret) {
			t.Errorf("verify %q: %v, %v", bearer, ok, err)
		}
		if ok && (tok.ID != made.ID || !tok.Allows("chez-marie") || tok.Allows("other")) {
			t.Errorf("verified %+v", tok)
		}
	}
	list, err := s.List(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != made.ID || list[0].Expired {
		t.Fatalf("list: %+v, %v", list, err)
	}

	c.add(2 * time.Hour)
	if _, ok, _ := other.Verify(t.Context(), made.Secret); ok {
		t.Fatal("an expired token verified")
	}
	if tok, err := s.Get(t.Context(), made.ID); err != nil || !tok.Expired {
		t.Fatalf("get an expired token: %+v, %v", tok, err)
	}

	c.add(-time.Hour) // valid again, and in other's cache
	if _, ok, _ := other.Verify(t.Context(), made.Secret); !ok {
		t.Fatal("a valid token refused")
	}
	if err := s.Revoke(t.Context(), made.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok, err := other.Verify(t.Context(), made.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked token still verifies on another process")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Revoke(t.Context(), made.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	cancel()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
}

// TestTokenRequestsRefused wants each bad field named, and the bound on tokens kept.
func TestTokenRequestsRefused(t *testing.T) {
	js, _ := jetStream(t)
	s := open(t, js, newClock(), 2)
	long := strings.Repeat("é", tokens.MaxName+1)
	for _, tc := range []struct {
		req   tokens.Request
		field string
	}{
		{tokens.Request{Scope: tokens.Platform}, "name"},
		{tokens.Request{Name: long, Scope: tokens.Platform}, "name"},
		{tokens.Request{Name: "evil\u202egnp.exe", Scope: tokens.Platform}, "name"},
		{tokens.Request{Name: "a\nb", Scope: tokens.Platform}, "name"},
		{tokens.Request{Name: "x", Scope: "admin"}, "scope"},
		{tokens.Request{Name: "x", Scope: tokens.Read, Establishments: []string{"a"}}, "establishments"},
		{tokens.Request{Name: "x", Scope: tokens.Establishment}, "establishments"},
		{tokens.Request{Name: "x", Scope: tokens.Establishment, Establishments: []string{"Bad Slug"}}, "establishments[0]"},
		{tokens.Request{Name: "x", Scope: tokens.Establishment, Establishments: []string{"a", "a"}}, "establishments[1]"},
		{tokens.Request{Name: "x", Scope: tokens.Establishment, Establishments: []string{"a", "nowhere"}}, "establishments[1]"},
		{tokens.Request{Name: "x", Scope: tokens.Platform, ExpiresIn: "forever"}, "expires_in"},
		{tokens.Request{Name: "x", Scope: tokens.Platform, ExpiresIn: "9000h"}, "expires_in"},
		{tokens.Request{Name: "x", Scope: tokens.Platform, ExpiresIn: "1s"}, "expires_in"},
	} {
		_, err := s.Create(t.Context(), tc.req, "")
		fields := domain.FieldErrors(err)
		if len(fields) != 1 || fields[0].Field != tc.field {
			t.Errorf("create %+v: %v, want one error on %s", tc.req, err, tc.field)
		}
	}
	for range 2 {
		if _, err := s.Create(t.Context(), tokens.Request{Name: "x", Scope: tokens.Read}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(t.Context(), tokens.Request{Name: "x", Scope: tokens.Read}, ""); app.KindOf(err) != app.KindConflict {
		t.Fatalf("a token past the bound: %v", err)
	}
}

// TestTokenCreatedOnceUnderAKey creates a token twice under one idempotency key, and once more
// with another request: the retry answers the first token without its secret, the other request
// is refused, and the bucket holds one token.
func TestTokenCreatedOnceUnderAKey(t *testing.T) {
	js, _ := jetStream(t)
	s := open(t, js, newClock(), 0)
	req := tokens.Request{Name: "cache", Scope: tokens.Read}
	id := app.KeyedCommandID("key-1 POST /admin/v1/tokens", []byte(`{"name":"cache","scope":"read"}`))
	first, err := s.Create(t.Context(), req, id)
	if err != nil || first.Secret == "" || first.Duplicate {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := s.Create(t.Context(), req, id)
	if err != nil || again.ID != first.ID || again.Secret != "" || !again.Duplicate {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	other := app.KeyedCommandID("key-1 POST /admin/v1/tokens", []byte(`{"name":"other","scope":"read"}`))
	if _, err := s.Create(t.Context(), tokens.Request{Name: "other", Scope: tokens.Read}, other); !errors.Is(err, app.ErrIdempotencyKeyReused) {
		t.Fatalf("the key with another request: %v", err)
	}
	if list, err := s.List(t.Context()); err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
}
