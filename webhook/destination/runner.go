package destination

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// Feed reads the changes feed: the entries after the cursor after ("" for a first sync), at
// most limit, waiting up to wait for a change when there is none, and the cursor of the next
// page. An error matching events.ErrChangesGone says the cursor's changes are no longer kept.
type Feed func(ctx context.Context, after string, limit int, wait time.Duration) (changes []events.Change, next string, err error)

// Defaults of RunnerConfig.
const (
	DefaultPageSize   = 500
	DefaultWait       = 20 * time.Second
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// RunnerConfig wires a Runner.
type RunnerConfig struct {
	Store *Store
	Feed  Feed
	// Openers connect to the brokers, by Spec.Type.
	Openers map[string]Opener
	// Source is the events' source attribute: the service's public URL.
	Source string
	Logger *slog.Logger
	// PageSize bounds the events of one publication; Wait is the long poll of the feed when
	// nothing is new. MinBackoff and MaxBackoff bound the wait after a failure, which doubles
	// from one to the other.
	PageSize               int
	Wait                   time.Duration
	MinBackoff, MaxBackoff time.Duration
}

// Runner publishes every destination that is not paused: one goroutine per destination, reading
// the changes feed from its position, publishing each page through its Sink, then storing the
// position after the page. One process at a time runs it (its caller holds a lease), so that a
// destination's events are published in order.
type Runner struct {
	cfg RunnerConfig
	wg  sync.WaitGroup
	mu  sync.Mutex
	run map[string]context.CancelFunc
	// last holds, per destination, the end of its latest goroutine, running or finishing.
	last map[string]chan struct{}
}

// NewRunner returns a Runner.
func NewRunner(cfg RunnerConfig) *Runner {
	cfg.PageSize = cmp.Or(cfg.PageSize, DefaultPageSize)
	cfg.Wait = cmp.Or(cfg.Wait, DefaultWait)
	cfg.MinBackoff = cmp.Or(cfg.MinBackoff, DefaultMinBackoff)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Runner{cfg: cfg, run: map[string]context.CancelFunc{}, last: map[string]chan struct{}{}}
}

// Run publishes the destinations until ctx ends: it watches the bucket, starting a destination's
// goroutine when it is created or resumed, and stopping it when it is paused or removed.
func (r *Runner) Run(ctx context.Context) error {
	defer r.wg.Wait()
	defer r.stopAll()
	w, err := r.cfg.Store.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("destination: watch %s: %w", Bucket, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // the watch ends with ctx
				}
				return errors.New("destination: the watch of the destinations ended")
			}
			if e == nil {
				continue // the current destinations are all listed
			}
			r.apply(ctx, e)
		}
	}
}

// apply starts or stops the destination of the bucket's entry e.
func (r *Runner) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	var rec record
	active := e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &rec) == nil && !rec.Paused
	r.mu.Lock()
	defer r.mu.Unlock()
	id := e.Key()
	stop, running := r.run[id]
	switch {
	case active && !running:
		dctx, cancel := context.WithCancel(ctx)
		r.run[id] = cancel
		// A goroutine of the destination that was stopped may still be finishing a page its
		// sink sent: the new one starts after it, so that two never publish at once.
		prev, done := r.last[id], make(chan struct{})
		r.last[id] = done
		r.wg.Go(func() {
			defer r.finished(id, done)
			if prev != nil {
				select {
				case <-prev:
				case <-dctx.Done():
					return
				}
			}
			r.serve(dctx, id)
		})
	case !active && running:
		stop()
		delete(r.run, id)
	}
}

// finished says that the goroutine of destination id whose end done marks returned.
func (r *Runner) finished(id string, done chan struct{}) {
	close(done)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[id] == done {
		delete(r.last, id)
	}
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, stop := range r.run {
		stop()
		delete(r.run, id)
	}
}

// publisher is the state of one destination's goroutine.
type publisher struct {
	r        *Runner
	id       string
	sink     Sink
	failures int             // in a row
	keep     map[string]bool // the establishments of a filtered destination, once read
	log      *slog.Logger
}

// serve publishes the destination id until ctx ends or it is paused or removed.
func (r *Runner) serve(ctx context.Context, id string) {
	p := &publisher{r: r, id: id, log: r.cfg.Logger.With("destination", id)}
	defer p.closeSink()
	for ctx.Err() == nil {
		err := p.step(ctx)
		switch {
		case errors.Is(err, ErrNotFound), errors.Is(err, errPaused):
			return
		case err != nil && ctx.Err() == nil:
			p.failed(ctx, err)
			if events.Sleep(ctx, p.backoff()) != nil {
				return
			}
		}
	}
}

var errPaused = errors.New("destination: paused")

// step publishes the page after the destination's position and stores the position after it.
func (p *publisher) step(ctx context.Context) error {
	rec, _, err := p.r.cfg.Store.get(ctx, p.id)
	if err != nil {
		return err
	}
	if rec.Paused {
		return errPaused
	}
	if p.sink == nil {
		if err := p.open(ctx, rec); err != nil {
			return err
		}
	}
	changes, next, err := p.r.cfg.Feed(ctx, rec.Position, p.r.cfg.PageSize, p.r.cfg.Wait)
	if errors.Is(err, events.ErrChangesGone) {
		return p.gap(ctx, rec, err)
	}
	if err != nil {
		return fmt.Errorf("read the changes: %w", err)
	}
	evs := p.events(rec.Spec, changes)
	if len(evs) > 0 {
		if err := p.sink.Publish(ctx, evs); err != nil {
			p.closeSink() // opened again for the next attempt
			return fmt.Errorf("publish: %w", err)
		}
	}
	if next == rec.Position && len(evs) == 0 {
		return nil
	}
	// A page the broker took is recorded even when the runner is stopping, so that a restart
	// does not publish it again.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	return p.advance(actx, rec.Position, next, len(evs))
}

// storeTimeout bounds the write of a position once its page is published.
const storeTimeout = 5 * time.Second

// events returns the events of the changes the destination's filter keeps.
func (p *publisher) events(spec Spec, changes []events.Change) []Event {
	if p.keep == nil && len(spec.Establishments) > 0 {
		p.keep = make(map[string]bool, len(spec.Establishments))
		for _, slug := range spec.Establishments {
			p.keep[slug] = true
		}
	}
	evs := make([]Event, 0, len(changes))
	for _, c := range changes {
		if p.keep != nil && !p.keep[c.Establishment] {
			continue
		}
		evs = append(evs, NewEvent(p.r.cfg.Source, c))
	}
	return evs
}

// open connects the destination's sink.
func (p *publisher) open(ctx context.Context, rec *record) error {
	opener := p.r.cfg.Openers[rec.Spec.Type]
	if opener == nil {
		return fmt.Errorf("no publisher for type %q in this process", rec.Spec.Type)
	}
	sec, err := p.r.cfg.Store.secrets(ctx, rec)
	if err != nil {
		return err
	}
	sink, err := opener(ctx, rec.Spec, sec)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	p.sink = sink
	return nil
}

func (p *publisher) closeSink() {
	if p.sink != nil {
		_ = p.sink.Close()
		p.sink = nil
	}
}

// advance stores the position next after a page of n events published from position from.
func (p *publisher) advance(ctx context.Context, from, next string, n int) error {
	now := p.r.cfg.Store.now().UTC()
	_, err := p.r.cfg.Store.update(ctx, p.id, func(r *record) error {
		if r.Position != from {
			return nil // moved by another process meanwhile: it published this page too
		}
		r.Position = next
		r.Published += uint64(n)
		if n > 0 || r.LastErrorAt.After(r.LastPublishedAt) {
			r.LastPublishedAt = now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store the position: %w", err)
	}
	if p.failures > 0 {
		p.log.Info("destination publishes again", "after_failures", p.failures)
		p.failures = 0
	}
	return nil
}

// gap starts a first sync over: the destination's position is older than the signals kept.
func (p *publisher) gap(ctx context.Context, rec *record, cause error) error {
	p.log.Warn("destination behind the changes kept: publishing every establishment's state again", "err", cause)
	now := p.r.cfg.Store.now().UTC()
	_, err := p.r.cfg.Store.update(ctx, p.id, func(r *record) error {
		if r.Position == rec.Position {
			r.Position, r.Gaps, r.LastGapAt = "", r.Gaps+1, now
		}
		return nil
	})
	return err
}

// failed records a failed attempt: its error and time, for the status.
func (p *publisher) failed(ctx context.Context, err error) {
	p.failures++
	if p.failures == 1 {
		p.log.Warn("destination failing; retrying with backoff", "err", err)
	}
	now := p.r.cfg.Store.now().UTC()
	_, _ = p.r.cfg.Store.update(ctx, p.id, func(r *record) error {
		r.Failures++
		r.LastError, r.LastErrorAt = err.Error(), now
		return nil
	})
}

// backoff returns the wait after the failures in a row so far: doubling from MinBackoff up to
// MaxBackoff, less up to a fifth at random so that destinations failing together spread out.
func (p *publisher) backoff() time.Duration {
	d := p.r.cfg.MinBackoff << min(max(p.failures-1, 0), 16)
	d = min(d, p.r.cfg.MaxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
