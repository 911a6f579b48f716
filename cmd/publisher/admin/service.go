package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// maxAttempts bounds the retries of a command that lost an optimistic-concurrency race.
const maxAttempts = 5

// ErrConflict means the command kept losing races with concurrent writers.
var ErrConflict = errors.New("admin: concurrent modification, try again")

// ErrTooLarge means a command would make the establishment's stored content larger than the
// event log or the documents bucket accept.
var ErrTooLarge = errors.New("too large to store")

// ErrIdempotencyKeyReused means an idempotency key already applied to a request was sent again
// with the same method and path but another body.
var ErrIdempotencyKeyReused = errors.New("already used with a different body for this operation")

// idempotentPrefix starts the command ids derived from an Idempotency-Key: the prefix, a digest
// of method, path and key, a dot, and a digest of the body.
const idempotentPrefix = "idem_"

// IdempotencyWindow is how long the service remembers the idempotency keys it applied, at the
// least: JetStream also drops a repeated command id within the stream's duplicate window.
const IdempotencyWindow = 24 * time.Hour

// Clock gives the local date in a time zone. Tests and demos fix it; serve uses the wall clock.
type Clock func(loc *time.Location) domain.LocalDate

// WallClock is the Clock of the real calendar.
func WallClock(loc *time.Location) domain.LocalDate { return domain.DateOf(time.Now().In(loc)) }

// eventLog is what the service needs of the event store.
type eventLog interface {
	Append(ctx context.Context, slug string, expected uint64, commandID string, evs []events.Envelope) (uint64, error)
	History(ctx context.Context, slug string) ([]events.Record, error)
	Slugs(ctx context.Context) ([]string, error)
}

// Service runs commands: it loads the aggregate, lets domain decide, appends the events with
// optimistic concurrency on the establishment's subject, and retries on fresh state when another
// writer won. Aggregates are cached in memory; a conflict reloads them from the log.
type Service struct {
	log    eventLog
	clock  Clock
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	entries map[domain.Slug]*entry

	check func(*domain.Establishment) error // nil: none
}

// CheckState makes every command check the state it leads to with check before appending its
// events; an error refuses the command. Call it before the service is used.
func (s *Service) CheckState(check func(*domain.Establishment) error) { s.check = check }

type entry struct {
	mu      sync.Mutex // serialises commands on one establishment inside this process
	loaded  bool
	est     *domain.Establishment
	version uint64                    // stream sequence of the establishment's last record
	applied map[string]appliedCommand // by command id up to the dot: keyed commands of the window
}

// appliedCommand is a command appended under an idempotency key.
type appliedCommand struct {
	id       string
	sequence uint64
	events   int
	at       time.Time
}

// remember records a command appended under an idempotency key, and forgets those older than
// the window.
func (en *entry) remember(id string, seq uint64, events int, at, now time.Time) {
	scope, _, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, idempotentPrefix) || now.Sub(at) > IdempotencyWindow {
		return
	}
	if en.applied == nil {
		en.applied = map[string]appliedCommand{}
	}
	en.applied[scope] = appliedCommand{id: id, sequence: seq, events: events, at: at}
	for k, c := range en.applied {
		if now.Sub(c.at) > IdempotencyWindow {
			delete(en.applied, k)
		}
	}
}

// replayed returns the result of the command already applied under id's idempotency key, if
// any: a duplicate when id is the same, ErrIdempotencyKeyReused when the body differed.
func (en *entry) replayed(slug domain.Slug, id string) (Result, bool, error) {
	scope, _, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, idempotentPrefix) {
		return Result{}, false, nil
	}
	c, found := en.applied[scope]
	switch {
	case !found:
		return Result{}, false, nil
	case c.id != id:
		return Result{}, true, ErrIdempotencyKeyReused
	}
	return Result{Slug: slug, Version: c.sequence, Events: c.events, Duplicate: true}, true, nil
}

// NewService returns a service over log. clock may be nil for the wall clock.
func NewService(log eventLog, clock Clock, logger *slog.Logger) *Service {
	if log == nil || logger == nil {
		panic("admin: nil dependency")
	}
	if clock == nil {
		clock = WallClock
	}
	return &Service{log: log, clock: clock, logger: logger, now: time.Now, entries: map[domain.Slug]*entry{}}
}

// Result is the outcome of an accepted command.
type Result struct {
	Slug      domain.Slug `json:"slug"`
	Version   uint64      `json:"version"`           // stream sequence of the establishment after the command
	Events    int         `json:"events"`            // events appended; 0 when the command changed nothing
	Duplicate bool        `json:"duplicate"`         // the command id had already been applied
	Created   bool        `json:"created,omitempty"` // the command created the establishment
}

// decision is a command bound to its arguments.
type decision func(e *domain.Establishment) ([]domain.Event, error)

// Execute runs decide on the current state of slug and appends its events under commandID.
// An empty commandID gets a random one (no idempotency across retries of the caller).
func (s *Service) Execute(ctx context.Context, slug domain.Slug, commandID string, decide decision) (Result, error) {
	if commandID == "" {
		commandID = NewID("cmd")
	}
	en := s.entry(slug)
	en.mu.Lock()
	defer en.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if err := s.load(ctx, slug, en); err != nil {
			return Result{}, err
		}
		// A retry is answered from the log before it is decided again on a state it changed.
		if res, ok, err := en.replayed(slug, commandID); ok {
			return res, err
		}
		evs, err := decide(en.est)
		if err != nil {
			return Result{}, err
		}
		res := Result{Slug: slug, Version: en.version}
		if len(evs) == 0 {
			return res, nil
		}
		res.Created = !en.est.Created
		if today := s.clock(en.est.Location()); en.est.Created && en.est.Today != today && !startsDay(evs) {
			// The calendar moved since the last event: record it first, so that the events of this
			// command render against today.
			if day, _ := en.est.StartDay(today); len(day) > 0 {
				evs = append(day, evs...)
			}
		} else if !en.est.Created {
			evs = append(evs, domain.DayStarted{Date: s.clock(locationOf(evs))})
		}
		envs, err := s.envelopes(slug, evs)
		if err != nil {
			return Result{}, err
		}
		// The cached state runs ahead of the log until the append succeeds: any way out before
		// that reloads it from the log on next use.
		en.loaded = false
		for _, ev := range evs {
			en.est.Apply(ev)
		}
		if s.check != nil {
			if err := s.check(en.est); err != nil {
				return Result{}, err
			}
		}
		seq, err := s.log.Append(ctx, string(slug), en.version, commandID, envs)
		switch {
		case errors.Is(err, events.ErrRecordTooLarge):
			return Result{}, fmt.Errorf("%w: %w", ErrTooLarge, err)
		case errors.Is(err, events.ErrDuplicate):
			return Result{Slug: slug, Version: seq, Duplicate: true}, nil // the log holds the first application
		case errors.Is(err, events.ErrConflict):
			if attempt >= maxAttempts {
				return Result{}, fmt.Errorf("%s: %w", slug, ErrConflict)
			}
			continue
		case err != nil:
			return Result{}, err
		}
		en.loaded, en.version = true, seq
		en.remember(commandID, seq, len(evs), envs[0].Time, s.now())
		res.Version, res.Events = seq, len(evs)
		return res, nil
	}
}

// startsDay reports whether evs hold a day-started event: the command moves the calendar itself.
func startsDay(evs []domain.Event) bool {
	return slices.ContainsFunc(evs, func(ev domain.Event) bool {
		_, ok := ev.(domain.DayStarted)
		return ok
	})
}

// locationOf returns the time zone an establishment is created with.
func locationOf(evs []domain.Event) *time.Location {
	for _, ev := range evs {
		if c, ok := ev.(domain.EstablishmentCreated); ok {
			e := domain.Establishment{TimeZone: c.TimeZone}
			return e.Location()
		}
	}
	return (&domain.Establishment{}).Location()
}

func (s *Service) envelopes(slug domain.Slug, evs []domain.Event) ([]events.Envelope, error) {
	now := s.now().UTC()
	envs := make([]events.Envelope, 0, len(evs))
	for _, ev := range evs {
		payload, err := domain.EncodeEvent(ev)
		if err != nil {
			return nil, err
		}
		envs = append(envs, events.Envelope{
			Type: ev.EventType(), Establishment: string(slug), Time: now,
			SchemaVersion: domain.SchemaVersion, Payload: payload,
		})
	}
	return envs, nil
}

func (s *Service) entry(slug domain.Slug) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.entries[slug]
	if !ok {
		en = &entry{}
		s.entries[slug] = en
	}
	return en
}

// load rebuilds the aggregate from the log unless the cached one is current.
func (s *Service) load(ctx context.Context, slug domain.Slug, en *entry) error {
	if en.loaded {
		return nil
	}
	recs, err := s.log.History(ctx, string(slug))
	if err != nil {
		return fmt.Errorf("load %s: %w", slug, err)
	}
	est := domain.New(slug)
	var version uint64
	en.applied = nil
	now := s.now()
	for _, r := range recs {
		if len(r.Events) > 0 {
			en.remember(r.CommandID, r.Sequence, len(r.Events), r.Events[0].Time, now)
		}
		for _, env := range r.Events {
			ev, err := domain.DecodeEvent(env.Type, env.SchemaVersion, env.Payload)
			if err != nil {
				s.logger.Warn("skipping undecodable event", "establishment", slug, "sequence", r.Sequence, "type", env.Type, "err", err)
				continue
			}
			est.Apply(ev)
		}
		version = r.Sequence
	}
	en.est, en.version, en.loaded = est, version, true
	return nil
}

// Get returns a copy-safe view of the current state of slug: its import snapshot, webhook
// endpoints, local date and version. It reports domain.ErrNotFound for an unknown slug.
func (s *Service) Get(ctx context.Context, slug domain.Slug) (State, error) {
	en := s.entry(slug)
	en.mu.Lock()
	defer en.mu.Unlock()
	en.loaded = false // always read what the log says, other writers included
	if err := s.load(ctx, slug, en); err != nil {
		return State{}, err
	}
	if !en.est.Created {
		return State{}, fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound)
	}
	st := State{
		Establishment: en.est.Snapshot(),
		Webhooks:      slices.Clone(en.est.Webhooks),
		Version:       en.version,
	}
	if st.Webhooks == nil {
		st.Webhooks = []domain.WebhookEndpoint{}
	}
	if !en.est.Today.IsZero() {
		st.Today = en.est.Today.String()
	}
	return st, nil
}

// State is what the admin API shows of an establishment: never the key or a secret.
type State struct {
	Establishment domain.Snapshot          `json:"establishment"`
	Webhooks      []domain.WebhookEndpoint `json:"webhook_endpoints"`
	Today         string                   `json:"today,omitempty"`
	Version       uint64                   `json:"version"`
}

// List returns the slugs of every establishment in the log.
func (s *Service) List(ctx context.Context) ([]string, error) {
	slugs, err := s.log.Slugs(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(slugs)
	return slugs, nil
}

// Tick is one pass of the clock role: every establishment whose public content depends on the
// calendar and whose recorded day is behind its local date gets a DayStarted event. Several
// clocks append it once: the loser of the race sees the day already started.
func (s *Service) Tick(ctx context.Context) error {
	slugs, err := s.log.Slugs(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, raw := range slugs {
		slug, err := domain.ParseSlug(raw)
		if err != nil {
			continue
		}
		var date domain.LocalDate
		_, err = s.Execute(ctx, slug, "", func(e *domain.Establishment) ([]domain.Event, error) {
			if !e.DateDependent() {
				return nil, nil
			}
			date = s.clock(e.Location())
			return e.StartDay(date)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("start day %s: %w", slug, err))
		}
	}
	return errors.Join(errs...)
}

// RunClock calls Tick every interval until ctx ends.
func (s *Service) RunClock(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.logger.Error("clock tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// NewID returns prefix, an underscore and 128 random bits in hex.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// NewAPIKey draws a fresh API key.
func NewAPIKey() domain.APIKey {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return domain.NewAPIKey(b)
}
