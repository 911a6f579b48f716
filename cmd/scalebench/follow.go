package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// follower is what a platform keeps of every establishment: the newest revision and served state
// it learned, from a platform webhook endpoint or from the changes feed.
type follower struct {
	mu    sync.Mutex
	state map[string]events.Change
	back  int // entries that would have taken an establishment back in revision
	// A platform endpoint's deliveries: how many, their bytes and entries, the last one's time.
	sizes, entries []int
	last           time.Time
}

func newFollower() *follower { return &follower{state: make(map[string]events.Change)} }

// apply keeps the changes, counting those older than what is held.
func (f *follower) apply(changes []events.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range changes {
		if had, ok := f.state[c.Establishment]; ok && c.Revision < had.Revision {
			f.back++
			continue
		}
		f.state[c.Establishment] = c
	}
}

// ServeHTTP receives a platform delivery.
func (f *follower) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var p webhook.PlatformPayload
	if err := json.Unmarshal(body, &p); err != nil || req.Header.Get(webhook.HeaderWebhookSignature) == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.apply(p.Data.Changes)
	f.mu.Lock()
	f.sizes, f.entries, f.last = append(f.sizes, len(body)), append(f.entries, len(p.Data.Changes)), time.Now()
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// backs returns how many entries would have taken an establishment back in revision.
func (f *follower) backs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.back
}

// deliveries returns what the endpoint received since the last call, and forgets it.
func (f *follower) deliveries() (sizes, entries []int, last time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes, entries, last = f.sizes, f.entries, f.last
	f.sizes, f.entries, f.last = nil, nil, time.Time{}
	return sizes, entries, last
}

// spread is "min/median/max" of v.
func spread(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%d/%d/%d", s[0], s[len(s)/2], s[len(s)-1])
}

// registerPlatform registers the receiver's platform endpoint, for every establishment.
func (s *service) registerPlatform(ctx context.Context, endpoint string) error {
	body := fmt.Sprintf(`{"url": %q}`, endpoint)
	_, err := s.adminCall(ctx, http.MethodPost, "/admin/v1/webhooks", body, http.StatusCreated)
	return err
}

// adminCall sends one request to the admin API and returns the body of an answer of status want.
func (s *service) adminCall(ctx context.Context, method, path, body string, want int) ([]byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.adminURL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != want {
		err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return b, err
}

// feedPage is a page of the changes feed.
type feedPage struct {
	Changes []events.Change `json:"changes"`
	Next    string          `json:"next"`
}

// sync reads the changes feed from its start until the first sync is over, into f, and returns
// the cursor to follow from and how many entries it read.
func (s *service) syncFeed(ctx context.Context, f *follower) (string, int, error) {
	cursor, n := "", 0
	for {
		p, err := s.feedPage(ctx, cursor, 0)
		if err != nil {
			return "", n, err
		}
		f.apply(p.Changes)
		n += len(p.Changes)
		if cursor = p.Next; len(p.Changes) == 0 {
			return cursor, n, nil
		}
	}
}

func (s *service) feedPage(ctx context.Context, after string, wait time.Duration) (feedPage, error) {
	q := url.Values{"limit": {"1000"}, "after": {after}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	b, err := s.adminCall(ctx, http.MethodGet, "/admin/v1/changes?"+q.Encode(), "", http.StatusOK)
	if err != nil {
		return feedPage{}, err
	}
	var p feedPage
	err = json.Unmarshal(b, &p)
	return p, err
}

// followFeed long-polls the feed from cursor into f until ctx ends, waiting out a restart of the
// service; polls counts the answers.
func (s *service) followFeed(ctx context.Context, cursor string, f *follower, polls *atomic.Int64) {
	for ctx.Err() == nil {
		p, err := s.feedPage(ctx, cursor, time.Minute)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		polls.Add(1)
		f.apply(p.Changes)
		cursor = p.Next
	}
}

// served reads every establishment imported through the read API with its key (from the
// import's results): its content_revision, or 0 when it is not served (404).
func (s *service) served(ctx context.Context, results string) (map[string]int64, error) {
	file, err := os.Open(results)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	type keyed struct{ slug, key string }
	var all []keyed
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var r struct {
			Slug   string `json:"slug"`
			APIKey string `json:"api_key"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Slug != "" {
			all = append(all, keyed{r.Slug, r.APIKey})
		}
	}
	out := make([]int64, len(all))
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	err = parallelN(32, len(all), func(i int) error {
		if all[i].key == "" {
			return nil // never served: a draft, or its API disabled
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.api+"/api/v1/establishments/"+all[i].slug, nil)
		req.Header.Set("X-Api-Key", all[i].key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var doc struct {
			Revision int64 `json:"content_revision"`
		}
		switch err := json.NewDecoder(resp.Body).Decode(&doc); {
		case resp.StatusCode == http.StatusNotFound:
		case err != nil || resp.StatusCode != http.StatusOK:
			return fmt.Errorf("read %s: %s", all[i].slug, resp.Status)
		default:
			out[i] = doc.Revision
		}
		return nil
	})
	m := make(map[string]int64, len(all))
	for i, k := range all {
		m[k.slug] = out[i]
	}
	return m, err
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
