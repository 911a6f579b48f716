package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// follower is what a platform keeps of every establishment: the newest revision and served state
// it learned, from a platform webhook endpoint or from the changes feed.
type follower struct {
	mu    sync.Mutex
	state map[string]events.Change
	back  int // entries that would have taken an establishment back in revision
	// verifier checks a platform delivery's signature.
	verifier *standardwebhooks.Webhook
	got      batches // since the last take
}

// batches is what a follower received since a point: each delivery's (or page's) bytes and
// entries, when the last came, and its position in the change signals (the signal its cursor
// names) with when that position last rose; and the deliveries refused, whose signature did not
// verify or whose body was not a platform payload, answered 400 as a receiver would.
type batches struct {
	sizes, entries []int
	last           time.Time
	position       uint64
	reached        time.Time
	refused        int
}

func newFollower() *follower { return &follower{state: make(map[string]events.Change)} }

// receive keeps a delivery or a page of size bytes, whose cursor is next.
func (f *follower) receive(changes []events.Change, size int, next string) {
	now := time.Now()
	c, err := events.ParseCursor(next)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range changes {
		if had, ok := f.state[c.Establishment]; ok && c.Revision < had.Revision {
			f.back++
			continue
		}
		f.state[c.Establishment] = c
	}
	g := &f.got
	if len(changes) > 0 {
		g.sizes, g.entries, g.last = append(g.sizes, size), append(g.entries, len(changes)), now
	}
	if err == nil && c.Signal > g.position {
		g.position, g.reached = c.Signal, now
	}
}

// ServeHTTP receives a platform delivery, checking its signature.
func (f *follower) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var p webhook.PlatformPayload
	if err == nil {
		err = f.verifier.Verify(body, req.Header)
	}
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	if err == nil && p.Type != webhook.EventEstablishmentsUpdated {
		err = fmt.Errorf("type %q", p.Type)
	}
	if err != nil {
		f.mu.Lock()
		f.got.refused++
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.receive(p.Data.Changes, len(body), p.Data.Cursor)
	w.WriteHeader(http.StatusNoContent)
}

// backs returns how many entries would have taken an establishment back in revision.
func (f *follower) backs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.back
}

// take returns what the follower received since the last call, and forgets it but its position.
func (f *follower) take() batches {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.got
	f.got = batches{position: g.position, reached: g.reached}
	return g
}

// mismatch counts the establishments f holds otherwise than the read API serves them: a served
// one absent or at another revision, or one not served that f says is. With all, an establishment
// never served must be held as not served; otherwise it may be absent.
func (f *follower) mismatch(served map[string]int64, all bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for slug, rev := range served {
		c, ok := f.state[slug]
		switch {
		case rev > 0 && (!ok || !c.Served || c.Revision != rev):
			n++
		case rev == 0 && ok && c.Served, rev == 0 && !ok && all:
			n++
		}
	}
	return n
}

// spread is "min/median/max" of v.
func spread(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%d/%d/%d", s[0], s[len(s)/2], s[len(s)-1])
}

// total is the sum of v.
func total(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// count returns how many establishments f holds.
func (f *follower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.state)
}
