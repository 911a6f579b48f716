// Package changes serves the changes feed: every establishment's current state (a first sync, read
// from the bucket of bundles the read API serves), then every change after it (read from the
// change signals), in pages, each entry an events.Change, from an opaque cursor that survives
// restarts and works on any node. A cache that applies the pages in order holds every
// establishment at the revision the read API serves, and never goes back in revision.
//
// A first sync reads the bucket's stream with batched direct gets from the cursor's position, so
// that it streams the bucket rather than loading it, and decodes of each bundle only its access
// fields, revision and entity tags. It records, before reading, the last signal, from which the
// changes go on once the whole bucket is read; the signals that follow, up to the last one when
// the sync ended, whose bundle write the sync read or passed are dropped (events.Cursor.Skips), as
// the sync gave that state or a newer one. A cursor whose signals the stream no longer keeps, or a
// sync whose bucket a rebuild replaced, is ErrGone: the client starts over.
//
// Long polls share one subscription to the signal subjects per Feed: a page that would be empty
// waits for the signals' stream to grow, or for its wait to end. No consumer, goroutine or timer
// is kept per establishment or per client beyond the request's own; a Feed has one goroutine. A
// Feed bounds the pages it reads at once and the reads it lets wait, so that it bounds its own
// cost: its callers need not count long polls against their other requests.
//
// It imports the standard library, nats.go, its jetstream package, orbit.go's jetstreamext,
// events, projections and its runner (the name of a generation's bucket); nothing of the
// transports.
package changes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
)

// Bounds of a page.
const (
	MaxLimit = 1000
	MaxWait  = 60 * time.Second
)

// Defaults of Config.
const (
	DefaultMaxReads   = 16
	DefaultMaxWaiters = 4096
)

// ErrGone reports a cursor the feed can no longer continue from: its signals are older than the
// retention, or its first sync read a bucket a rebuild has since replaced.
var ErrGone = errors.New("changes: cursor too old")

// Page is one answer of the feed.
type Page struct {
	Changes []events.Change `json:"changes"`
	// Next is the cursor of the following page.
	Next string `json:"next"`
}

// Config wires a Feed.
type Config struct {
	// Conn reaches NATS; the caller keeps ownership.
	Conn *nats.Conn
	// Signals reads the change signals.
	Signals *events.Signals
	// Generation returns the generation of bundles served now.
	Generation func() int
	// MaxReads bounds the pages read at once; the others wait their turn. 0 is DefaultMaxReads.
	MaxReads int
	// MaxWaiters bounds the reads waiting for a change at once; past it, a read answers its empty
	// page without waiting. 0 is DefaultMaxWaiters.
	MaxWaiters int
}

// Feed reads the changes feed. It is safe for concurrent use.
type Feed struct {
	cfg   Config
	js    jetstream.JetStream
	sub   *nats.Subscription
	reads chan struct{} // a token per page being read

	nudge  chan struct{} // a signal was published: see watch
	stop   context.CancelFunc
	closed chan struct{} // closed when watch returns

	waiters atomic.Int64
	mu      sync.Mutex
	new     chan struct{} // closed, and replaced, when the signals' stream grows
}

// New returns a Feed and subscribes to the signals for its long polls; Close ends the
// subscription.
func New(cfg Config) (*Feed, error) {
	if cfg.Conn == nil || cfg.Signals == nil || cfg.Generation == nil {
		return nil, errors.New("changes: connection, signals and generation are required")
	}
	cfg.MaxReads = cmp.Or(max(cfg.MaxReads, 0), DefaultMaxReads)
	cfg.MaxWaiters = cmp.Or(max(cfg.MaxWaiters, 0), DefaultMaxWaiters)
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	f := &Feed{cfg: cfg, js: js, reads: make(chan struct{}, cfg.MaxReads), new: make(chan struct{}),
		nudge: make(chan struct{}, 1), closed: make(chan struct{})}
	f.sub, err = cfg.Conn.Subscribe(events.SignalSubjects, func(*nats.Msg) {
		select {
		case f.nudge <- struct{}{}:
		default: // a look is due already
		}
	})
	if err != nil {
		return nil, fmt.Errorf("changes: subscribe to the signals: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	go f.watch(ctx)
	return f, nil
}

// Waiting returns how many reads wait for a change now.
func (f *Feed) Waiting() int { return int(f.waiters.Load()) }

// Close ends the subscription of the long polls and the goroutine that wakes them.
func (f *Feed) Close() {
	_ = f.sub.Unsubscribe()
	f.stop()
	<-f.closed
}

// Read returns the page after the cursor after ("" for a first sync) of at most limit
// establishments (1 to MaxLimit). When a page of changes would be empty, it waits up to wait
// (at most MaxWait) for the signals' stream to grow and reads again. The errors match events.ErrInvalidCursor or
// ErrGone for a cursor the client must replace.
func (f *Feed) Read(ctx context.Context, after string, limit int, wait time.Duration) (Page, error) {
	cur := events.Cursor{Sync: true}
	if after != "" {
		var err error
		if cur, err = events.ParseCursor(after); err != nil {
			return Page{}, err
		}
	}
	limit = min(max(limit, 1), MaxLimit)
	if cur.Sync {
		return f.sync(ctx, cur, after == "", limit)
	}
	woken := f.next()
	page, cur, err := f.live(ctx, cur, limit)
	if err != nil || len(page.Changes) > 0 || wait <= 0 {
		return page, err
	}
	if f.waiters.Add(1) > int64(f.cfg.MaxWaiters) {
		f.waiters.Add(-1)
		return page, nil // as many wait as may: this one answers at once
	}
	defer f.waiters.Add(-1)
	return f.await(ctx, page, cur, woken, limit, min(wait, MaxWait))
}

// await waits up to wait for a change after cur, whose page is empty, reading again each time the
// signals' stream grows (woken, then the next); it answers the first page that is not empty, or
// the last one read once wait ends: a page whose signals were all dropped moves the cursor only.
func (f *Feed) await(ctx context.Context, page Page, cur events.Cursor, woken <-chan struct{}, limit int, wait time.Duration) (Page, error) {
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		select {
		case <-woken:
		case <-timeout.C:
			return page, nil
		case <-ctx.Done():
			return page, nil // the client left: nobody reads the page
		}
		woken = f.next()
		next, at, err := f.live(ctx, cur, limit)
		if err != nil || len(next.Changes) > 0 {
			return next, err
		}
		page, cur = next, at
	}
}

// turn waits for a token to read a page; done gives it back.
func (f *Feed) turn(ctx context.Context) (done func(), err error) {
	select {
	case f.reads <- struct{}{}:
		return func() { <-f.reads }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// live reads a page of changes after cur; it returns the page and the cursor of the next.
func (f *Feed) live(ctx context.Context, cur events.Cursor, limit int) (Page, events.Cursor, error) {
	done, err := f.turn(ctx)
	if err != nil {
		return Page{}, cur, err
	}
	defer done()
	p, err := f.cfg.Signals.Changes(ctx, events.ChangesQuery{After: cur.Signal, Limit: limit, Skip: cur.Skips})
	if errors.Is(err, events.ErrChangesGone) {
		return Page{}, cur, fmt.Errorf("%w: %w", ErrGone, err)
	}
	if err != nil {
		return Page{}, cur, err
	}
	next := cur
	next.Signal = p.Next
	if next.SkipUntil <= next.Signal {
		next.SkipStoredUpTo, next.SkipUntil = 0, 0 // past what the sync gave
	}
	return Page{Changes: p.Changes, Next: next.String()}, next, nil
}

// sync reads a page of the first sync at cur; start says it is the first page.
func (f *Feed) sync(ctx context.Context, cur events.Cursor, start bool, limit int) (Page, error) {
	done, err := f.turn(ctx)
	if err != nil {
		return Page{}, err
	}
	defer done()
	if start {
		last, err := f.cfg.Signals.LastSequence(ctx)
		if err != nil {
			return Page{}, err
		}
		cur.Signal, cur.Generation = last, f.cfg.Generation()
	} else if cur.Generation != f.cfg.Generation() {
		return Page{}, fmt.Errorf("%w: generation %d of the documents was replaced", ErrGone, cur.Generation)
	}
	bucket, _ := runner.GenerationBuckets(cur.Generation)
	stream := "KV_" + bucket
	var end uint64 // a bucket no projector made yet holds nothing
	info, err := f.js.Stream(ctx, stream)
	switch {
	case err == nil:
		end = info.CachedInfo().State.LastSeq
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return Page{}, fmt.Errorf("changes: bucket %s: %w", bucket, err)
	}
	page := Page{Changes: []events.Change{}}
	// A batch brings up to readBytes of bundles: as many as the limit takes.
	for cur.Bundle < end && len(page.Changes) < limit {
		if cur.Bundle, err = f.bundles(ctx, stream, bucket, cur.Bundle, end, limit-len(page.Changes), &page); err != nil {
			return Page{}, err
		}
	}
	if cur.Bundle < end {
		page.Next = cur.String()
		return page, nil
	}
	// The whole bucket is read: the changes go on from the last signal before the sync.
	signals, err := f.cfg.Signals.LastSequence(ctx)
	if err != nil {
		return Page{}, err
	}
	live := events.Cursor{Signal: cur.Signal, Generation: cur.Generation, SkipStoredUpTo: end, SkipUntil: signals}
	page.Next = live.String()
	return page, nil
}

// bundles adds to page an entry for each bundle of the bucket's stream after sequence from, up to
// end, until limit entries; it returns the sequence of the last message read.
func (f *Feed) bundles(ctx context.Context, stream, bucket string, from, end uint64, limit int, page *Page) (uint64, error) {
	// Every message of the stream, without a subject filter: a wildcard filter makes the server
	// look for each next message anew. Keys that are not bundles are passed over below.
	msgs, err := jetstreamext.GetBatch(ctx, f.js, stream, limit, jetstreamext.GetBatchSeq(from+1),
		jetstreamext.GetBatchMaxBytes(readBytes))
	if err != nil {
		return from, fmt.Errorf("changes: read bucket %s: %w", bucket, err)
	}
	read := from
	for msg, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return end, nil // nothing left on the bundles' subjects
		}
		if err != nil {
			return from, fmt.Errorf("changes: read bucket %s: %w", bucket, err)
		}
		read = msg.Sequence
		if len(msg.Data) == 0 || msg.Sequence > end {
			continue // a deletion marker, or a write after the page began
		}
		s, err := projections.SummarizeStored(msg.Data)
		if err != nil {
			continue // a bundle the read API refuses too
		}
		slug, ok := dockey.SlugOf(strings.TrimPrefix(msg.Subject, "$KV."+bucket+"."))
		if !ok {
			continue
		}
		page.Changes = append(page.Changes, events.Change{
			Establishment: slug, Revision: s.Revision(),
			Resources: events.MergeResources(s.Resources()), Served: s.Served(),
			Seq: msg.Sequence, Synced: true, At: msg.Time,
		})
	}
	if read == from {
		return from, fmt.Errorf("changes: read bucket %s after %d: no answer", bucket, from)
	}
	return min(read, end), nil
}

// readBytes bounds the bytes of one batch of bundles: the replies of a batch arrive in one burst.
const readBytes = 4 << 20
