package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/tokens"
	"github.com/opencarte/publisher/domain"
)

// access says which credentials a route serves.
type access int

const (
	noCredential access = iota // no credential: the API's description
	platformAll                // the platform's credentials only: content, platform-wide writes
	reads                      // platform and read credentials: reads of the whole platform
	ownReads                   // and an establishment credential of the path's establishment
	ownSettings                // platform credentials, and an establishment credential of the path's establishment
	adminOnly                  // the admin token alone: a token never makes tokens, which could outlive it
)

// permits says whether a credential of scope may use a route of this access, once an
// establishment credential is known to cover the path's establishment. The admin token, which
// has the platform's scope, may also use the routes of adminOnly.
func (acc access) permits(scope tokens.Scope) bool {
	switch scope {
	case tokens.Platform:
		return acc != adminOnly
	case tokens.Read:
		return acc == reads || acc == ownReads
	case tokens.Establishment:
		return acc == ownReads || acc == ownSettings
	}
	return false
}

// adminActor is the admin token as the audit names it.
var adminActor = app.Actor{ID: "admin", Name: "admin token"}

type credentialKey struct{}

// credential returns the credential bearer is, and whether it is one: the admin token, or a
// token of Config.Tokens neither revoked nor expired. An error says the tokens could not be read.
// The admin token is compared by digest, in constant time whatever the lengths.
func (a *API) credential(ctx context.Context, bearer string) (tokens.Token, bool, error) {
	if sum := sha256.Sum256([]byte(bearer)); subtle.ConstantTimeCompare(sum[:], a.adminDigest[:]) == 1 {
		return tokens.Token{ID: adminActor.ID, Name: adminActor.Name, Scope: tokens.Platform}, true, nil
	}
	if a.cfg.Tokens == nil {
		return tokens.Token{}, false, nil
	}
	t, ok, err := a.cfg.Tokens.Verify(ctx, bearer)
	if err != nil {
		return tokens.Token{}, false, fmt.Errorf("%w: %w", app.ErrUnavailable, err)
	}
	return t, ok, nil
}

// withCredential returns ctx carrying the credential t: its actor for the commands, its scope for
// the routes.
func withCredential(ctx context.Context, t tokens.Token) context.Context {
	return context.WithValue(app.WithActor(ctx, t.Actor()), credentialKey{}, t)
}

// credentialOf returns the credential of a request authentication let through.
func credentialOf(r *http.Request) tokens.Token {
	t, _ := r.Context().Value(credentialKey{}).(tokens.Token)
	return t
}

// allow returns h behind the scope check of its access. An establishment credential meets any
// establishment it does not cover as one that does not exist: the answer is the 404 of an unknown
// establishment, whatever the route, so that it cannot even learn which exist. Otherwise a
// credential whose scope does not cover the route is answered 403.
func (a *API) allow(acc access, h httprouter.Handle) httprouter.Handle {
	if acc == noCredential {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		t := credentialOf(r)
		if slug := ps.ByName("slug"); t.Scope == tokens.Establishment && slug != "" && !t.Allows(slug) {
			a.fail(w, r, fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound))
			return
		}
		if !acc.permits(t.Scope) && !(acc == adminOnly && t.ID == adminActor.ID) {
			a.fail(w, r, &app.Refusal{Kind: app.KindForbidden, Err: fmt.Errorf("Authorization: a token of scope %s may not %s %s", t.Scope, r.Method, r.URL.Path)})
			return
		}
		h(w, r, ps)
	}
}
