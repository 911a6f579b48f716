// Package clock is the clock role: it puts the calendar into the event log. When the local date of
// an establishment whose public documents depend on the date (exceptional hours, a menu rotating
// by day, week or month) moves on, the clock appends one day-started event to it, through the
// write side's application layer; the projection then renders the new day like any other change.
//
// # Finding who to wake up
//
// The clock keeps an index, in the KV bucket CALENDAR, of every establishment's time zone, date
// dependence and recorded day. The index is derived from the log: each record carries the
// establishment's calendar in a header (app.CalendarHeader), and the clock follows the log's
// headers (no bodies) with one durable consumer, shared by every clock process. A new or emptied
// index is rebuilt once from every establishment's state (a sweep), then kept by the headers.
//
// A pass reads the index (one stream of small values, whatever the number of establishments)
// and starts the day of each date-dependent establishment whose recorded day is behind its local
// date, through a bounded pool of workers. Within Config.Lead of a zone's midnight, it also
// prepares the next day of each one whose day is current (a day-ahead event), so that the
// projection renders that day before it starts and the read API serves it from midnight; the
// day-started event still follows at midnight, and records the day. Passes run at the first tick, whenever a local date
// moves (time zones change date on quarter hours), and after a pass that left failures: what
// failed is retried on the next tick. A failure on one establishment never stops the others, nor
// the process. Each pass logs one summary line with counts and at most a few examples.
//
// Several clock processes can run: each day is appended once, because the write side appends
// with optimistic concurrency and a day already started is no change.
package clock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// ReaderName is the durable consumer through which clocks follow the log's calendar headers.
const ReaderName = "clock-calendar"

// Defaults of Config.
const (
	DefaultInterval = 15 * time.Second
	DefaultWorkers  = 32
	DefaultLead     = time.Hour
)

// maxExamples bounds the failures a pass summary names; maxReason bounds each one's text.
const (
	maxExamples = 5
	maxReason   = 200
)

// maxRetries bounds the establishments a pass remembers to try again; past it, the next pass goes
// over everything again.
const maxRetries = 10_000

// dayStarter starts an establishment's day; *app.Commands satisfies it.
type dayStarter interface {
	// StartDay loads the establishment and starts its day if it is due.
	StartDay(ctx context.Context, slug domain.Slug) (app.DayResult, error)
	// StartDayAt starts it from its calendar as of record seq, loading it only if the log moved.
	StartDayAt(ctx context.Context, slug domain.Slug, cal app.Calendar, seq uint64) (app.DayResult, error)
	// PrepareDayAt prepares its next day as StartDayAt starts its day.
	PrepareDayAt(ctx context.Context, slug domain.Slug, cal app.Calendar, seq uint64) (app.DayResult, error)
}

// noteLog is what the clock reads of the event log; *events.Store satisfies it.
type noteLog interface {
	OpenNoteReader(ctx context.Context, name string) (bool, error)
	FollowNotes(ctx context.Context, name string, workers int, fn func(events.Note) error) error
	NotesPending(ctx context.Context, name string) (uint64, error)
	Slugs(ctx context.Context) ([]string, error)
}

// Config wires a Clock.
type Config struct {
	Days   dayStarter
	Log    noteLog
	Index  *Index
	Today  app.Clock // each time zone's local date; nil is the wall clock
	Logger *slog.Logger
	// Interval is the time between two ticks; 0 is DefaultInterval.
	Interval time.Duration
	// Workers bounds the day changes in flight; 0 is DefaultWorkers.
	Workers int
	// Now is the wall clock of the quarter-hour schedule and of the passes' times; nil is
	// time.Now.
	Now func() time.Time
	// Instant is the calendar's instant, by which the next days are prepared, and false when the
	// calendar has none (a fixed date): then no day is prepared. Nil is Now. It is Now shifted when
	// the calendar runs from another instant (a demo's): a zone's date moving is what starts a
	// pass then, and a next day is prepared at the first pass within its lead.
	Instant func() (time.Time, bool)
	// Lead is how long before a zone's midnight the next day of its establishments is prepared;
	// 0 is DefaultLead, a negative one prepares nothing.
	Lead time.Duration
}

// Validate reports a missing dependency.
func (c Config) Validate() error {
	if c.Days == nil || c.Log == nil || c.Index == nil || c.Logger == nil {
		return errors.New("clock: config: days, log, index and logger are required")
	}
	if c.Interval < 0 || c.Workers < 0 {
		return errors.New("clock: config: interval and workers must not be negative")
	}
	return nil
}

// Pass is the outcome of one pass over the index, or of a sweep over every establishment.
type Pass struct {
	Kind     string    `json:"kind"` // "scan", "sweep", or "retry" of an earlier pass's failures
	Started  time.Time `json:"started"`
	Took     string    `json:"took"`
	Examined int       `json:"examined"` // establishments looked at
	Due      int       `json:"due"`      // establishments whose day was to start
	Appended int       `json:"appended"` // days started by this pass
	Ahead    int       `json:"ahead"`    // establishments whose next day was to be prepared
	Prepared int       `json:"prepared"` // next days prepared by this pass
	Failed   int       `json:"failed"`
	// Behind counts the calendar headers not yet in the index when a scan began: its
	// establishments are looked at again by the next pass.
	Behind   uint64   `json:"behind,omitempty"`
	Examples []string `json:"examples,omitempty"` // a few failures
}

// Status is what the clock tells of itself.
type Status struct {
	Passes   int64 `json:"passes"`
	Appended int64 `json:"appended"` // days started by passes since start
	Prepared int64 `json:"prepared"` // next days prepared by passes since start
	Pending  int   `json:"pending"`  // establishments whose day start failed, to try again
	LastPass *Pass `json:"last_pass,omitempty"`
	Notes    int64 `json:"notes"` // record headers followed since start
}

// Clock is the clock role.
type Clock struct {
	cfg   Config
	locs  locations
	notes atomic.Int64

	mu       sync.Mutex
	zones    map[string]domain.LocalDate // each zone's date at the last complete pass
	scanned  time.Time                   // when the last complete pass started
	retry    bool                        // the index is to be passed over again
	retries  []string                    // establishments a pass failed on, unless too many
	passes   int64
	appended int64
	prepared int64
	lastPass *Pass
}

// New returns the clock of cfg.
func New(cfg Config) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Today == nil {
		cfg.Today = app.WallClock
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Instant == nil {
		now := cfg.Now
		cfg.Instant = func() (time.Time, bool) { return now(), true }
	}
	if cfg.Lead == 0 {
		cfg.Lead = DefaultLead
	}
	return &Clock{cfg: cfg, zones: map[string]domain.LocalDate{}}, nil
}

// Status returns the clock's counters and its last pass.
func (c *Clock) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{Passes: c.passes, Appended: c.appended, Prepared: c.prepared, Pending: len(c.retries), LastPass: c.lastPass, Notes: c.notes.Load()}
}

// Run follows the log's calendar headers and ticks every interval until ctx ends. Nothing an
// establishment does stops it; it returns only ctx's error.
func (c *Clock) Run(ctx context.Context) error {
	for {
		err := c.openReader(ctx)
		if err == nil {
			break
		}
		c.cfg.Logger.Warn("clock: open the log's calendar headers, retrying", "err", err)
		if events.Sleep(ctx, c.cfg.Interval) != nil {
			return ctx.Err()
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.follow(ctx) })

	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := c.Tick(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("clock tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// openReader makes sure the durable reader of calendar headers exists. A reader created now
// follows only the records to come, and the index may hold what another log said (a log rebuilt
// from scratch reuses sequences): the index is emptied, and the next tick sweeps every
// establishment into it.
func (c *Clock) openReader(ctx context.Context) error {
	created, err := c.cfg.Log.OpenNoteReader(ctx, ReaderName)
	if err != nil || !created {
		return err
	}
	return c.cfg.Index.reset(ctx)
}

// follow keeps the index up to date with the calendar header of every record. A reader that
// disappeared is made again.
func (c *Clock) follow(ctx context.Context) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		err := c.cfg.Log.FollowNotes(ctx, ReaderName, c.cfg.Workers, func(n events.Note) error { return c.note(ctx, n) })
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, events.ErrNoReader) {
			err = errors.Join(err, c.openReader(ctx))
		}
		c.cfg.Logger.Warn("clock: following the log's calendar headers failed, resuming", "retry_in", wait, "err", err)
		if events.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// note records the calendar of one record in the index. A record without a readable calendar
// (written by older code) has its establishment's calendar read from its state instead. An
// establishment whose day is behind right after a record, one appended as its zone changed date
// while a pass was reading the index, has its day started now.
func (c *Clock) note(ctx context.Context, n events.Note) error {
	c.notes.Add(1)
	slug, err := domain.ParseSlug(n.Establishment)
	if err != nil {
		return nil // not an establishment of this service: nothing to index
	}
	cal, err := app.ParseCalendar(n.Header[app.CalendarHeader])
	if err != nil {
		_, err := c.safeStartDay(ctx, slug, nil, false)
		if err != nil && app.KindOf(err) != app.KindUnavailable {
			// The establishment cannot be loaded (a damaged record, say): following it again
			// would not help; its failures show in the passes over the index.
			return nil
		}
		return err
	}
	if err := c.cfg.Index.Put(ctx, string(slug), Entry{Calendar: cal, Sequence: n.Sequence}); err != nil {
		return err
	}
	if c.due(cal) && c.cfg.Now().Sub(n.Time) < 2*c.cfg.Interval {
		_, err := c.safeStartDay(ctx, slug, &Entry{Calendar: cal, Sequence: n.Sequence}, false)
		if err != nil && app.KindOf(err) != app.KindUnavailable {
			return nil // the next pass over the index tries again
		}
		return err
	}
	return nil
}

// due reports whether an establishment with calendar cal needs its day started.
func (c *Clock) due(cal app.Calendar) bool {
	return cal.Dependent && (cal.Today.IsZero() || cal.Today.Before(c.today(cal.Zone)))
}

// aheadDue reports whether an establishment with calendar cal, whose day is current, needs its
// next day prepared at the calendar's instant now: within Config.Lead of its midnight.
func (c *Clock) aheadDue(cal app.Calendar, now time.Time) bool {
	if c.cfg.Lead < 0 || !cal.Dependent {
		return false
	}
	loc := c.locs.get(cal.Zone)
	today := c.cfg.Today(loc)
	next := today.AddDays(1)
	if cal.Today != today || cal.Ahead == next {
		return false
	}
	return !now.Before(next.StartIn(loc).Add(-c.cfg.Lead))
}

func (c *Clock) today(zone string) domain.LocalDate { return c.cfg.Today(c.locs.get(zone)) }

// safeStartDay is startDay, with a panic turned into the establishment's failure: nothing one
// establishment holds stops the others or the process.
func (c *Clock) safeStartDay(ctx context.Context, slug domain.Slug, known *Entry, ahead bool) (appended bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.startDay(ctx, slug, known, ahead)
}

// startDay starts the day of slug, or prepares its next day (ahead, known not nil), from its
// index entry when there is one. A day started from the entry is recorded in the index from the
// header of the record it appended; one decided on the loaded establishment is recorded at
// once, since nothing else may say it (no record was appended when the day had started). It
// reports whether an event was appended.
func (c *Clock) startDay(ctx context.Context, slug domain.Slug, known *Entry, ahead bool) (bool, error) {
	var res app.DayResult
	var err error
	switch {
	case known != nil && ahead:
		res, err = c.cfg.Days.PrepareDayAt(ctx, slug, known.Calendar, known.Sequence)
	case known != nil:
		res, err = c.cfg.Days.StartDayAt(ctx, slug, known.Calendar, known.Sequence)
	default:
		res, err = c.cfg.Days.StartDay(ctx, slug)
	}
	if err != nil {
		return false, err
	}
	if !res.Direct {
		err = c.cfg.Index.Put(ctx, string(slug), Entry{Calendar: res.Calendar, Sequence: res.Version})
	}
	return res.Events > 0, err
}

// Tick runs the passes that are due: a sweep over every establishment while the index is not
// complete; else a new try of the establishments an earlier sweep failed on, and a pass over the
// index when this is the first tick, a local date moved, or the last pass left failures. It
// returns the last pass run, or nil when none was due.
func (c *Clock) Tick(ctx context.Context) (*Pass, error) {
	complete, err := c.cfg.Index.Complete(ctx)
	if err != nil {
		return nil, err
	}
	if !complete {
		return c.record(ctx, c.sweep(ctx, nil)), nil
	}
	var last *Pass
	c.mu.Lock()
	retries := c.retries
	c.mu.Unlock()
	if len(retries) > 0 {
		last = c.record(ctx, c.sweep(ctx, retries))
	}
	if c.scanDue(ctx) {
		p, err := c.scan(ctx)
		if err != nil {
			return last, err
		}
		last = c.record(ctx, p)
	}
	return last, nil
}

// record counts pass p and logs its one-line summary.
func (c *Clock) record(ctx context.Context, p *Pass) *Pass {
	c.mu.Lock()
	c.passes++
	c.appended += int64(p.Appended)
	c.prepared += int64(p.Prepared)
	c.lastPass = p
	c.mu.Unlock()
	level := slog.LevelDebug
	if p.Due > 0 || p.Ahead > 0 || p.Failed > 0 || p.Kind != "scan" {
		level = slog.LevelInfo
	}
	c.cfg.Logger.Log(ctx, level, "clock pass", "kind", p.Kind, "examined", p.Examined, "due", p.Due,
		"appended", p.Appended, "ahead", p.Ahead, "prepared", p.Prepared, "failed", p.Failed,
		"behind", p.Behind, "took", p.Took, "examples", p.Examples)
	return p
}

// scanDue reports whether a pass over the index is due.
func (c *Clock) scanDue(ctx context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.scanned.IsZero() || now.Truncate(15*time.Minute).After(c.scanned.Truncate(15*time.Minute)) {
		return true
	}
	if c.retry {
		// The index may have missed headers: pass again once they are followed, when the entries
		// of the days the last pass started are current too, or after a while regardless.
		pending, err := c.cfg.Log.NotesPending(ctx, ReaderName)
		return err != nil || pending == 0 || now.Sub(c.scanned) > 2*time.Minute
	}
	for zone, date := range c.zones {
		if c.today(zone) != date {
			return true
		}
	}
	return false
}

// scan passes over the index and starts the day of every establishment that is due. The index
// is as recent as the calendar headers followed so far: when some were still to be followed, the
// pass is done again at the next tick, so that an establishment indexed meanwhile is not left
// behind.
func (c *Clock) scan(ctx context.Context) (*Pass, error) {
	started := c.cfg.Now()
	// Unknown counts as behind: the pass is done again.
	behind, err := c.cfg.Log.NotesPending(ctx, ReaderName)
	unsure := err != nil || behind > 0
	zones := map[string]domain.LocalDate{}
	p := &Pass{Kind: "scan", Started: started.UTC()}
	run, failures := c.workers(ctx, p)
	instant, timed := c.cfg.Instant()
	err = c.cfg.Index.Scan(ctx, func(slug string, e Entry) error {
		p.Examined++
		if _, ok := zones[e.Calendar.Zone]; !ok {
			zones[e.Calendar.Zone] = c.today(e.Calendar.Zone)
		}
		switch {
		case c.due(e.Calendar):
			p.Due++
			run(job{slug: slug, entry: &e})
		case timed && c.aheadDue(e.Calendar, instant):
			p.Ahead++
			run(job{slug: slug, entry: &e, ahead: true})
		}
		return nil
	})
	run(job{})
	failed := failures()
	p.Took = c.cfg.Now().Sub(started).Round(time.Millisecond).String()
	if err != nil {
		return nil, fmt.Errorf("clock pass: %w", err)
	}
	p.Behind = behind
	c.mu.Lock()
	// What failed is tried again at the next tick; only too many failures to remember, or an
	// index that may have missed headers, make the next tick pass over the whole index again.
	c.retries = append(c.retries, failed...)
	tooMany := len(c.retries) > maxRetries
	if tooMany {
		c.retries = nil
	}
	c.zones, c.scanned, c.retry = zones, started, unsure || tooMany
	c.mu.Unlock()
	return p, nil
}

// sweep starts the day of every establishment of the log, or of those of retries, and records
// each one's calendar in the index. Once it has looked at every establishment, the index is
// complete: the establishments it failed on are tried again at the following ticks, and a
// failing one never holds the others back. Only when too many failed to remember them does the
// next tick sweep everything again.
func (c *Clock) sweep(ctx context.Context, retries []string) *Pass {
	started := c.cfg.Now()
	p := &Pass{Kind: "sweep", Started: started.UTC()}
	slugs := retries
	if retries != nil {
		p.Kind = "retry"
	} else {
		all, err := c.cfg.Log.Slugs(ctx)
		if err != nil {
			p.Failed, p.Examples = 1, []string{clip("list establishments: " + err.Error())}
			p.Took = c.cfg.Now().Sub(started).Round(time.Millisecond).String()
			return p
		}
		// Several clocks sweeping at once start in different places.
		rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		slugs = all
	}
	run, failures := c.workers(ctx, p)
	for _, slug := range slugs {
		p.Examined++
		run(job{slug: slug})
	}
	run(job{})
	failed := failures()
	p.Took = c.cfg.Now().Sub(started).Round(time.Millisecond).String()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retries = nil
	switch {
	case len(failed) > maxRetries:
		if err := c.cfg.Index.setComplete(ctx, false); err != nil {
			p.Examples = append(p.Examples, clip(err.Error()))
		}
	case retries == nil:
		c.retries = failed
		if err := c.cfg.Index.setComplete(ctx, true); err != nil {
			p.Failed++
			p.Examples = append(p.Examples, clip(err.Error()))
		}
	default:
		c.retries = failed
	}
	return p
}

// job is one establishment to start the day of, or to prepare the next day of (ahead), with its
// index entry when it has one.
type job struct {
	slug  string
	entry *Entry
	ahead bool
}

// workers returns the function that hands one establishment to a bounded pool starting days for
// pass p, the zero job waiting for them all, and the function that then returns the
// establishments that failed, at most maxRetries+1 of them: one more tells there were too many.
func (c *Clock) workers(ctx context.Context, p *Pass) (run func(job), failures func() []string) {
	var failed []string
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range c.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				s, err := domain.ParseSlug(j.slug)
				if err != nil {
					continue // not an establishment of this service: nothing to start
				}
				appended, err := c.safeStartDay(ctx, s, j.entry, j.ahead)
				if errors.Is(err, domain.ErrNotFound) {
					err = nil // records without an establishment: nothing to start
				}
				mu.Lock()
				switch {
				case appended && j.ahead:
					p.Prepared++
				case appended:
					p.Appended++
				}
				if err != nil {
					p.Failed++
					if len(p.Examples) < maxExamples {
						p.Examples = append(p.Examples, clip(j.slug+": "+err.Error()))
					}
					if len(failed) <= maxRetries {
						failed = append(failed, j.slug)
					}
				}
				mu.Unlock()
			}
		})
	}
	run = func(j job) {
		if j.slug == "" {
			close(jobs)
			wg.Wait()
			return
		}
		jobs <- j
	}
	return run, func() []string { return failed }
}

// clip bounds the text of one example.
func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason] + "…"
}

// maxZones bounds the time zones cached: there are fewer than 600 of them.
const maxZones = 1024

// locations caches time zones by name; an unknown name is the default zone.
type locations struct {
	m sync.Map // string → *time.Location
	n atomic.Int32
}

func (l *locations) get(zone string) *time.Location {
	if loc, ok := l.m.Load(zone); ok {
		return loc.(*time.Location)
	}
	loc := (&domain.Establishment{TimeZone: zone}).Location()
	if l.n.Load() < maxZones {
		if _, loaded := l.m.LoadOrStore(zone, loc); !loaded {
			l.n.Add(1)
		}
	}
	return loc
}
