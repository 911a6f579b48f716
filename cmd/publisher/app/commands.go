package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// Defaults of Config.
const (
	DefaultCacheSize     = 1000
	DefaultSnapshotEvery = 8
	DefaultMaxLoads      = 64
)

// maxAttempts bounds the retries of a command that lost an optimistic-concurrency race.
const maxAttempts = 5

// Clock gives the local date in a time zone. Tests and demos fix it; serve uses the wall clock.
type Clock func(loc *time.Location) domain.LocalDate

// WallClock is the Clock of the real calendar.
func WallClock(loc *time.Location) domain.LocalDate { return domain.DateOf(time.Now().In(loc)) }

// Config wires Commands.
type Config struct {
	// Log is the event log, normally an *events.Store. Required.
	Log eventLog
	// Snapshots keeps aggregate snapshots, normally an *events.Snapshots; nil folds every
	// establishment's whole history on each load.
	Snapshots snapshotStore
	// Webhooks stores webhook endpoints with their secrets; required for the webhook commands.
	Webhooks webhookRegistry
	// Clock gives each establishment's local date; nil is the wall clock.
	Clock Clock
	// Logger is required.
	Logger *slog.Logger
	// CheckContent, optional, checks the state e a user command leads to before it is appended,
	// and refuses the command with its error (the documents would not fit the bucket, say).
	// created says the command creates the establishment, whose whole content is then in the
	// command's events, of eventBytes bytes of payload. The clock's day changes are not checked:
	// the calendar moves whatever the content.
	CheckContent func(e *domain.Establishment, created bool, eventBytes int) error
	// CacheSize is how many aggregates are kept in memory; 0 is DefaultCacheSize.
	CacheSize int
	// SnapshotEvery is how many records are folded before a snapshot is written; 0 is
	// DefaultSnapshotEvery.
	SnapshotEvery int
	// MaxLoads bounds the loads from the log running at once; 0 is DefaultMaxLoads.
	MaxLoads int
	// Now is the time of new events; nil is time.Now.
	Now func() time.Time
	// Audit keeps the audit trail, normally an *events.Audit; nil keeps none (the log's records
	// still name their actors).
	Audit auditTrail
	// Files stores uploaded menu files, normally an *events.Files; nil refuses uploads and
	// references to stored files.
	Files fileStore
	// PublicURL is the base URL of the read API, which serves stored files under
	// domain.FilesPath: the URL of an upload given back to the client, and the URLs recognised
	// as naming a stored file. The log names files by their digests.
	PublicURL string
	// FileGrace is how long a stored file nothing refers to is kept; 0 is DefaultFileGrace.
	FileGrace time.Duration
	// Room, optional, says whether the stores are short of room, and why: the writes that grow
	// them (user commands, uploads, webhook registrations) are then refused with ErrStorageFull,
	// while the clock's day changes go on.
	Room func() (reason string, full bool)
}

// Validate reports a missing dependency or a bad setting.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("app: config: log is required"))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("app: config: logger is required"))
	}
	if c.Files != nil && domain.ValidateURL(c.PublicURL) != nil {
		errs = append(errs, fmt.Errorf("app: config: public URL %q: want the absolute http or https base URL of the read API", c.PublicURL))
	}
	if c.CacheSize < 0 || c.SnapshotEvery < 0 || c.MaxLoads < 0 || c.FileGrace < 0 {
		errs = append(errs, fmt.Errorf("app: config: cache size %d, snapshot interval %d and load limit %d must not be negative", c.CacheSize, c.SnapshotEvery, c.MaxLoads))
	}
	return errors.Join(errs...)
}

// Commands runs the commands of the write side. It is safe for concurrent use.
type Commands struct {
	log      eventLog
	webhooks webhookRegistry
	clock    Clock
	logger   *slog.Logger
	check    func(*domain.Establishment, bool, int) error
	room     func() (string, bool)
	now      func() time.Time
	locks    locks
	repo     *repository
	trail    auditTrail

	files     fileStore
	filesBase string   // PublicURL without a trailing slash
	base      *url.URL // PublicURL, parsed
	fileGrace time.Duration
}

// New returns the commands of cfg.
func New(cfg Config) (*Commands, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Commands{log: cfg.Log, webhooks: cfg.Webhooks, clock: cfg.Clock, logger: cfg.Logger, check: cfg.CheckContent, room: cfg.Room, now: cfg.Now, trail: cfg.Audit}
	if cfg.Audit == nil {
		c.trail = nil // a typed nil would look set
	}
	if c.clock == nil {
		c.clock = WallClock
	}
	if c.now == nil {
		c.now = time.Now
	}
	if cfg.Files != nil {
		c.files, c.filesBase = cfg.Files, strings.TrimRight(cfg.PublicURL, "/")
		c.base, _ = url.Parse(c.filesBase) // checked by Validate
	}
	c.fileGrace = cfg.FileGrace
	if c.fileGrace == 0 {
		c.fileGrace = DefaultFileGrace
	}
	size := cmp.Or(cfg.CacheSize, DefaultCacheSize)
	cache, err := lru.New[domain.Slug, *aggregate](size)
	if err != nil {
		return nil, fmt.Errorf("app: cache: %w", err)
	}
	c.repo = &repository{
		log: cfg.Log, snapshots: cfg.Snapshots, cache: cache,
		loads: make(chan struct{}, cmp.Or(cfg.MaxLoads, DefaultMaxLoads)),
		every: cmp.Or(cfg.SnapshotEvery, DefaultSnapshotEvery), c: c,
	}
	if cfg.Snapshots == nil {
		c.repo.snapshots = nil // a typed nil would look set
	}
	return c, nil
}

// Request names the establishment a command is for and, optionally, the id it is deduplicated
// by: an empty CommandID gets a random one, so the command is applied once per call.
type Request struct {
	Slug      domain.Slug
	CommandID string

	action, detail string // what the audit names the command, set by its method (as)
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

// commandKind says how a command relates to the calendar and to content checks.
type commandKind int

const (
	userCommand  commandKind = iota // checked, and recording a day change first if one is due
	clockCommand                    // moves the calendar itself; never refused for its content
)

// CommandTimeout bounds the execution of one command: a command the log did not acknowledge within
// it (the log's stream electing a leader after the loss of a server, say) is refused as
// unavailable, to be retried; a retry under the same command id is never applied twice. It is
// shorter than the usual client timeout of five seconds, so that clients hear the refusal.
const CommandTimeout = 4 * time.Second

// execute runs decide on the current state of the request's establishment and appends its events.
func (c *Commands) execute(ctx context.Context, req Request, kind commandKind, decide decision) (Result, error) {
	if req.CommandID == "" {
		req.CommandID = NewID("cmd")
	}
	ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	slug := req.Slug
	defer c.locks.lock(slug)()
	for attempt := 1; ; attempt++ {
		a, err := c.repo.get(ctx, slug)
		if err != nil {
			return Result{}, unavailable(err)
		}
		// A retry is answered from the log before it is decided again on a state it changed.
		if res, ok, err := a.replayed(slug, req.CommandID, c.now()); ok {
			c.repo.put(a)
			return res, err
		}
		evs, err := decide(a.est)
		res := Result{Slug: slug, Version: a.version}
		if err != nil || len(evs) == 0 {
			c.repo.put(a) // decisions do not change the state
			return res, err
		}
		res.Created = !a.est.Created
		if kind == userCommand {
			evs = c.withDay(a.est, evs)
		}
		envs, err := c.envelopes(slug, evs)
		if err != nil {
			c.repo.put(a)
			return Result{}, err
		}
		// From here the state runs ahead of the log until the append succeeds: it goes back to
		// the cache only then, and any other way out leaves it out, to be loaded again.
		for _, ev := range evs {
			a.est.Apply(ev)
		}
		if kind == userCommand {
			if err := c.roomFor(); err != nil {
				return Result{}, err
			}
		}
		if kind == userCommand && c.check != nil {
			size := 0
			for _, env := range envs {
				size += len(env.Payload)
			}
			if err := c.check(a.est, res.Created, size); err != nil {
				return Result{}, err
			}
		}
		opts := append(actorHeaders(ctx), events.WithHeader(CalendarHeader, CalendarOf(a.est).String()))
		seq, err := c.log.Append(ctx, string(slug), a.version, req.CommandID, envs, opts...)
		switch {
		case errors.Is(err, events.ErrRecordTooLarge):
			return Result{}, fmt.Errorf("%w: %w", ErrTooLarge, err)
		case errors.Is(err, events.ErrDuplicate):
			// The trail stores the entry once, whichever application stores it.
			c.audit(ctx, req, req.CommandID, seq)
			return Result{Slug: slug, Version: seq, Duplicate: true}, nil // the log holds the first application
		case errors.Is(err, events.ErrConflict):
			if attempt >= maxAttempts {
				return Result{}, fmt.Errorf("%s: %w", slug, ErrConflict)
			}
			continue
		case err != nil:
			return Result{}, c.writeFailed(err)
		}
		a.version, a.commandID = seq, req.CommandID
		a.folded++
		a.remember(req.CommandID, seq, len(evs), envs[0].Time, c.now())
		if a.folded >= c.repo.every {
			c.repo.save(ctx, a)
		}
		c.repo.put(a)
		c.audit(ctx, req, req.CommandID, seq)
		res.Version, res.Events = seq, len(evs)
		return res, nil
	}
}

// withDay puts a day-started event before the events of a user command when the calendar moved
// since the establishment's last event, so that they render against today. A new establishment
// records its first day after its creation, and one the command moves to another time zone
// records that zone's date after the move, whichever way the date moves: today, for its clients,
// is its local date (its revision still rises, as for any change of its documents).
func (c *Commands) withDay(e *domain.Establishment, evs []domain.Event) []domain.Event {
	if slices.ContainsFunc(evs, func(ev domain.Event) bool { _, ok := ev.(domain.DayStarted); return ok }) {
		return evs
	}
	if zone, set := zoneOf(evs); set || !e.Created {
		today := c.clock((&domain.Establishment{TimeZone: zone}).Location())
		if !e.Created || today != e.Today {
			return append(evs, domain.DayStarted{Date: today})
		}
		return evs
	}
	if today := c.clock(e.Location()); e.Today != today {
		if day, _ := e.StartDay(today); len(day) > 0 {
			return append(day, evs...)
		}
	}
	return evs
}

// zoneOf returns the time zone evs create an establishment with or move it to, and whether they
// do either.
func zoneOf(evs []domain.Event) (zone string, set bool) {
	for _, ev := range evs {
		switch ev := ev.(type) {
		case domain.EstablishmentCreated:
			zone, set = ev.TimeZone, true
		case domain.TimeZoneChanged:
			zone, set = ev.TimeZone, true
		}
	}
	return zone, set
}

func (c *Commands) envelopes(slug domain.Slug, evs []domain.Event) ([]events.Envelope, error) {
	now := c.now().UTC()
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

// unavailable marks a failure to reach the log or a store as such, unless it is already a
// refusal of another kind.
func unavailable(err error) error {
	if errors.Is(err, events.ErrStorageFull) {
		return &storageError{reason: "the event store refused the write for lack of room: free space on its volume or raise its limit", err: err}
	}
	if KindOf(err) != KindInternal {
		return err
	}
	if errors.Is(err, events.ErrInvalidRecord) {
		return err // a damaged record is a fault to look at, not a passing one
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
