package tokens

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// Bucket holds the tokens, one key per token id.
const Bucket = "TOKENS"

// Bounds of the tokens.
const (
	MaxTokens         = 10_000
	DefaultExpiry     = 30 * 24 * time.Hour
	MaxExpiry         = 366 * 24 * time.Hour
	MaxName           = 100 // characters
	MaxEstablishments = 100

	keptAfterExpiry = 7 * 24 * time.Hour // listed as expired that long, then gone
	cacheSize       = 4096
	cacheTTL        = time.Minute
	markerTTL       = time.Hour // how long the bucket keeps the marker of a token revoked or dropped
	unknownTTL      = 10 * time.Second
)

// Scope is what a token may do.
type Scope string

// The scopes.
const (
	Platform      Scope = "platform"      // everything, as the admin token
	Read          Scope = "read"          // the admin API's reads and the changes feed
	Establishment Scope = "establishment" // the API settings of its establishments, and reading them
)

// Token is a credential as the admin API lists it: never its secret.
type Token struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Scope          Scope     `json:"scope"`
	Establishments []string  `json:"establishments,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	CreatedBy      app.Actor `json:"created_by"`
	Expired        bool      `json:"expired"`
}

// Actor is the token as the audit names who gave a command.
func (t Token) Actor() app.Actor { return app.Actor{ID: t.ID, Name: t.Name} }

// Allows says whether the token's scope covers establishment slug.
func (t Token) Allows(slug string) bool {
	if t.Scope != Establishment {
		return true
	}
	for _, s := range t.Establishments {
		if s == slug {
			return true
		}
	}
	return false
}

// record is a token as the bucket holds it.
type record struct {
	Token
	Hash string `json:"hash"` // hex SHA-256 of the secret
	// CommandID is the id of the command that created it: under an idempotency key, a retry
	// carries the same, and the key sent with another body another.
	CommandID string `json:"command_id"`
}

// Request is the body that creates a token.
type Request struct {
	Name           string   `json:"name"`
	Scope          Scope    `json:"scope"`
	Establishments []string `json:"establishments"`
	ExpiresIn      string   `json:"expires_in"`
}

// Created is a token just created: the only answer that holds its secret. A retry under the same
// idempotency key answers the token it created, without its secret.
type Created struct {
	Token
	Secret    string `json:"token,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// Config wires a Store.
type Config struct {
	JS       jetstream.JetStream
	Replicas int
	// Exists reports domain.ErrNotFound for an establishment that does not exist: a token is not
	// created for one.
	Exists func(ctx context.Context, slug domain.Slug) error
	Now    func() time.Time // nil is time.Now
	// Max is how many tokens the bucket holds at most; 0 is MaxTokens.
	Max int
}

// Store creates, lists, revokes and verifies tokens. It is safe for concurrent use, also from
// several processes.
type Store struct {
	kv     jetstream.KeyValue
	exists func(context.Context, domain.Slug) error
	now    func() time.Time
	max    int
	cache  *expirable.LRU[string, record]
	// unknown are ids recently found in no record: a client sending made-up tokens costs one read
	// of the bucket per id, not per request. A created token's id is random, never among them.
	unknown *expirable.LRU[string, struct{}]
	// changes counts the changes Watch saw: a record read before one is not cached after it.
	changes atomic.Uint64
}

// Open creates the bucket, or updates it to this configuration, and returns its store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         Bucket,
		Description:    "Scoped admin tokens, by id: their names, scopes and expiries, and their secrets' hashes.",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       max(cfg.Replicas, 1),
		MaxValueSize:   16 << 10,
		LimitMarkerTTL: markerTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("tokens: bucket %s: %w", Bucket, err)
	}
	s := &Store{kv: kv, exists: cfg.Exists, now: cfg.Now, max: cmp.Or(cfg.Max, MaxTokens),
		cache:   expirable.NewLRU[string, record](cacheSize, nil, cacheTTL),
		unknown: expirable.NewLRU[string, struct{}](cacheSize, nil, unknownTTL),
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Watch drops from the cache every token another process changes or revokes, until ctx ends. It
// empties the cache as it starts, so that a watch started again after one that failed misses no
// revocation.
func (s *Store) Watch(ctx context.Context) error {
	w, err := s.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("tokens: watch: %w", err)
	}
	defer func() { _ = w.Stop() }()
	s.cache.Purge()
	s.changes.Add(1)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // the watch ends with ctx
				}
				return errors.New("tokens: the watch of the tokens ended")
			}
			if e != nil {
				s.changes.Add(1)
				s.cache.Remove(e.Key())
				s.unknown.Remove(e.Key())
			}
		}
	}
}

// Create validates req and stores a new token, created by the actor of ctx under commandID (see
// app.KeyedID); the answer holds its secret, which nothing keeps. A retry under the same
// idempotency key answers the token the first try made, without its secret; the key sent again
// with another request is refused (app.ErrIdempotencyKeyReused).
func (s *Store) Create(ctx context.Context, req Request, commandID string) (Created, error) {
	ttl, err := s.validate(ctx, &req)
	if err != nil {
		return Created{}, err
	}
	id := app.KeyedID("tok", commandID)
	if rec, err := s.get(ctx, id); err == nil {
		if rec.CommandID != commandID {
			return Created{}, fmt.Errorf("Idempotency-Key: %w", app.ErrIdempotencyKeyReused)
		}
		return Created{Token: s.listed(rec.Token), Duplicate: true}, nil
	} else if !errors.Is(err, domain.ErrNotFound) {
		return Created{}, err
	}
	if n, err := s.count(ctx); err != nil {
		return Created{}, fmt.Errorf("%w: %w", app.ErrUnavailable, err)
	} else if n >= s.max {
		return Created{}, &app.Refusal{Kind: app.KindConflict, Err: fmt.Errorf("there are %d tokens, the most this service keeps: revoke some first", n)}
	}
	now := s.now().UTC().Truncate(time.Second)
	creator, _ := app.ActorOf(ctx)
	t := Token{
		ID: id, Name: req.Name, Scope: req.Scope, Establishments: req.Establishments,
		CreatedAt: now, ExpiresAt: now.Add(ttl), CreatedBy: creator,
	}
	sec := app.NewSecret()
	data, err := json.Marshal(record{Token: t, Hash: app.SecretDigest(sec), CommandID: commandID})
	if err != nil {
		return Created{}, err
	}
	if _, err := s.kv.Create(ctx, t.ID, data, jetstream.KeyTTL(ttl+keptAfterExpiry)); errors.Is(err, jetstream.ErrKeyExists) {
		return s.Create(ctx, req, commandID) // the same key's other try came first
	} else if err != nil {
		return Created{}, fmt.Errorf("%w: tokens: store %s: %w", app.ErrUnavailable, t.ID, err)
	}
	s.unknown.Remove(t.ID)
	return Created{Token: t, Secret: t.ID + "." + sec}, nil
}

// validate checks req, naming each bad field, settles its defaults and returns its lifetime.
func (s *Store) validate(ctx context.Context, req *Request) (time.Duration, error) {
	var fe domain.FieldErrorList
	bad := func(field, reason string, args ...any) {
		fe.Add(&domain.FieldError{Field: field, Reason: fmt.Sprintf(reason, args...)})
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" {
		bad("name", "required: say who or what the token is for")
	} else if err := domain.ValidateLine(req.Name, MaxName); err != nil {
		bad("name", "%v", err)
	}
	switch req.Scope {
	case Platform, Read:
		if req.Establishments != nil {
			bad("establishments", "only a token of scope establishment names establishments")
		}
	case Establishment:
		if len(req.Establishments) == 0 || len(req.Establishments) > MaxEstablishments {
			bad("establishments", "want 1 to %d establishments", MaxEstablishments)
		}
		domain.CheckSlugs("establishments", req.Establishments, &fe)
	default:
		bad("scope", "want platform, read or establishment")
	}
	ttl := DefaultExpiry
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d < time.Minute || d > MaxExpiry {
			bad("expires_in", "want a duration from 1m to %s, such as \"720h\"", MaxExpiry)
		}
		ttl = d
	}
	if err := fe.Err(); err != nil || req.Scope != Establishment || s.exists == nil {
		return ttl, err
	}
	for i, slug := range req.Establishments {
		err := s.exists(ctx, domain.Slug(slug))
		switch {
		case errors.Is(err, domain.ErrNotFound):
			bad(fmt.Sprintf("establishments[%d]", i), "no establishment %q", slug)
		case err != nil:
			return ttl, err
		}
	}
	return ttl, fe.Err()
}
