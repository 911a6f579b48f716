package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Change is one establishment's entry in the changes feed and in a platform delivery: what a
// cache re-reads, and whether there is anything to read.
type Change struct {
	// Establishment is the establishment's slug.
	Establishment string `json:"establishment"`
	// Revision is its newest content_revision.
	Revision int64 `json:"content_revision"`
	// Resources names what changed: "establishment", "hours", "menus", then
	// "menus/<menu_type_slug>" by slug, then "jsonld". Never null.
	Resources []string `json:"resources"`
	// Served is false when the read API answers 404 for the establishment: in draft, or its API
	// disabled.
	Served bool `json:"served"`

	// Where the entry was read, not encoded: the stream sequence of its newest signal, or of its
	// bundle in a first sync (Synced), and when that message was stored. An entry read again from
	// the same position has the same ones, which name it in the events published to brokers.
	Seq    uint64    `json:"-"`
	Synced bool      `json:"-"`
	At     time.Time `json:"-"`
}

// ErrChangesGone reports a position in the change signals older than the stream keeps, or ahead
// of its end (a stream made anew): what followed it can no longer be read, and a reader starts
// over from the full state.
var ErrChangesGone = errors.New("events: changes after this position are no longer kept")

// Defaults and bounds of a ChangesQuery.
const (
	DefaultChangesLimit = 1000
	// maxChangesSignals bounds the signals one page reads, and so its cost, whatever the limit:
	// a page over a stretch of many signals of few establishments ends early, and the next goes on.
	maxChangesSignals = 50_000
)

// ChangesQuery says which signals Changes reads.
type ChangesQuery struct {
	// After is the sequence of the last signal already read; Changes reads those after it.
	After uint64
	// Until, unless 0, is the last sequence to read; 0 reads up to the last signal stored when
	// Changes is called.
	Until uint64
	// Limit bounds the establishments of a page; 0 is DefaultChangesLimit.
	Limit int
	// MaxBytes, unless 0, bounds the size of the page's entries encoded as JSON, roughly: a page
	// ends before the signal that would pass it, unless that signal would be its first.
	MaxBytes int
	// Keep, unless nil, says which establishments the page lists; the others' signals are read and
	// passed over.
	Keep func(slug string) bool
	// Skip, unless nil, drops a signal, given with its stream sequence.
	Skip func(seq uint64, s Signal) bool
}

// ChangesPage is what Changes read.
type ChangesPage struct {
	// Changes lists each establishment once, in the order of its first signal in the page, at its
	// newest revision with the union of its resources. It is never nil.
	Changes []Change
	// Next is the sequence of the last signal read, After when none was: the After of the next
	// page.
	Next uint64
	// Last is the sequence of the last signal the stream held when the page was read.
	Last uint64
}

// Changes reads the signals after q.After, as ChangesQuery says, merging each establishment's
// into one entry: its newest revision, the union of its resources and whether it is served at
// the newest (of two signals of one revision, the later). It reads with batched direct gets, no
// consumer. The error matches ErrChangesGone when signals after q.After were dropped by the
// stream's retention, or q.After is beyond its last signal.
func (p *Signals) Changes(ctx context.Context, q ChangesQuery) (ChangesPage, error) {
	info, err := p.stream.Info(ctx)
	if err != nil {
		return ChangesPage{}, fmt.Errorf("changes: stream %s: %w", SignalStreamName, err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	if q.After > last || q.After+1 < first && q.After != last {
		return ChangesPage{}, fmt.Errorf("%w: position %d, stream holds %d to %d", ErrChangesGone, q.After, first, last)
	}
	page := ChangesPage{Changes: []Change{}, Next: q.After, Last: last}
	until := last
	if q.Until != 0 {
		until = min(q.Until, last)
	}
	if q.After >= until {
		return page, nil
	}
	m := merger{limit: cmp.Or(max(q.Limit, 0), DefaultChangesLimit), maxBytes: q.MaxBytes, index: map[string]int{}, changes: page.Changes}
	read := 0
	start := jetstreamext.GetBatchSeq(q.After + 1)
	// Every message of the stream is a signal: read unfiltered, since with a filter the server
	// would match it against every subject of each block it reads to count what the batch holds.
	err = walkStream(ctx, p.js, SignalStreamName, "", start, false, until, func(msg *jetstream.RawStreamMsg) (bool, error) {
		s, err := DecodeSignal(msg.Data)
		if err == nil && (q.Keep == nil || q.Keep(s.Establishment)) && (q.Skip == nil || !q.Skip(msg.Sequence, s)) {
			if !m.add(s, msg.Sequence, msg.Time) {
				return true, nil // full: this signal starts the next page
			}
		}
		page.Next, read = msg.Sequence, read+1
		return read >= maxChangesSignals, nil
	})
	if err != nil {
		return ChangesPage{}, fmt.Errorf("changes after %d: %w", q.After, err)
	}
	page.Changes = m.changes
	return page, nil
}

// merger gathers a page's entries, one per establishment.
type merger struct {
	limit, maxBytes, bytes int
	changes                []Change
	index                  map[string]int
}

// add merges s, stored at sequence seq at time at, into the page, and reports false, adding
// nothing, when the page is full.
func (m *merger) add(s Signal, seq uint64, at time.Time) bool {
	i, ok := m.index[s.Establishment]
	if !ok {
		size := entrySize(s.Establishment, s.Revision, s.Resources)
		if len(m.changes) > 0 && (len(m.changes) >= m.limit || m.maxBytes > 0 && m.bytes+size > m.maxBytes) {
			return false
		}
		m.index[s.Establishment] = len(m.changes)
		m.changes = append(m.changes, Change{
			Establishment: s.Establishment, Revision: s.Revision,
			Resources: MergeResources(s.Resources), Served: !s.Unserved, Seq: seq, At: at,
		})
		m.bytes += size
		return true
	}
	c := &m.changes[i]
	before := entrySize(c.Establishment, c.Revision, c.Resources)
	if s.Revision >= c.Revision {
		c.Revision, c.Served = s.Revision, !s.Unserved
	}
	c.Seq, c.At = seq, at
	c.Resources = MergeResources(c.Resources, s.Resources)
	m.bytes += entrySize(c.Establishment, c.Revision, c.Resources) - before
	return true
}

// entrySize is about the length of a Change encoded as JSON, with its separating comma.
func entrySize(slug string, revision int64, resources []string) int {
	n := len(`{"establishment":"","content_revision":,"resources":[],"served":false},`) + len(slug)
	n += len(strconv.FormatInt(revision, 10))
	for _, r := range resources {
		n += len(r) + 3
	}
	return n
}

// MergeResources returns the union of the lists, without duplicates, in the API's order:
// "establishment", "hours", "menus", then the menu details by name, then "jsonld". It never
// returns nil.
func MergeResources(lists ...[]string) []string {
	out := []string{}
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(x, y string) int {
		return cmp.Or(cmp.Compare(resourceRank(x), resourceRank(y)), strings.Compare(x, y))
	})
	return slices.Compact(out)
}

// resourceRank orders resources as the API lists them.
func resourceRank(r string) int {
	switch {
	case r == "establishment":
		return 0
	case r == "hours":
		return 1
	case r == "menus":
		return 2
	case strings.HasPrefix(r, "menus/"):
		return 3
	case r == "jsonld":
		return 4
	default:
		return 5
	}
}
