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
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/opencarte/publisher/events"
)

// The service as a platform sees it: its platform webhook endpoints and its changes feed through
// the admin API, every establishment through the read API, and its change signals' last one.

// registerPlatform registers endpoint as a platform endpoint for every establishment, and returns
// the verifier of its signatures.
func (s *service) registerPlatform(ctx context.Context, endpoint string) (*standardwebhooks.Webhook, error) {
	body := fmt.Sprintf(`{"url": %q}`, endpoint)
	b, err := s.adminCall(ctx, http.MethodPost, "/admin/v1/webhooks", body, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	var reg struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		return nil, fmt.Errorf("register a platform endpoint: %w", err)
	}
	return standardwebhooks.NewWebhook(reg.Secret)
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

// syncFeed reads the changes feed from its start until the first sync is over, into f, and
// returns the cursor to follow from and how many entries it read.
func (s *service) syncFeed(ctx context.Context, f *follower) (string, int, error) {
	cursor, n := "", 0
	for {
		p, err := s.readFeed(ctx, cursor, 0, f)
		if err != nil {
			return "", n, err
		}
		n += len(p.Changes)
		if cursor = p.Next; len(p.Changes) == 0 {
			return cursor, n, nil
		}
	}
}

// readFeed reads the page of the changes feed after the cursor after, waiting up to wait for a
// change, into f.
func (s *service) readFeed(ctx context.Context, after string, wait time.Duration, f *follower) (feedPage, error) {
	q := url.Values{"limit": {"1000"}, "after": {after}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	b, err := s.adminCall(ctx, http.MethodGet, "/admin/v1/changes?"+q.Encode(), "", http.StatusOK)
	if err != nil {
		return feedPage{}, err
	}
	var p feedPage
	if err := json.Unmarshal(b, &p); err != nil {
		return feedPage{}, fmt.Errorf("a page of the changes feed: %w", err)
	}
	f.receive(p.Changes, len(b), p.Next)
	return p, nil
}

// followFeed long-polls the feed from cursor into f until ctx ends, waiting out a restart of the
// service; polls counts the answers, failed the requests that failed (while the service is down
// between two phases, or a cursor refused).
func (s *service) followFeed(ctx context.Context, cursor string, f *follower, polls, failed *atomic.Int64) {
	for ctx.Err() == nil {
		p, err := s.readFeed(ctx, cursor, time.Minute, f)
		if err != nil {
			failed.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		polls.Add(1)
		cursor = p.Next
	}
}

// lastSignal returns the sequence of the service's last change signal and when it was stored.
func (s *service) lastSignal(ctx context.Context) (uint64, time.Time, error) {
	auth, err := nats.NkeyOptionFromSeed(s.seed())
	if err != nil {
		return 0, time.Time{}, err
	}
	nc, err := nats.Connect(s.natsURL, auth)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, time.Time{}, err
	}
	st, err := js.Stream(ctx, events.SignalStreamName)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stream %s: %w", events.SignalStreamName, err)
	}
	state := st.CachedInfo().State
	return state.LastSeq, state.LastTime, nil
}

// served reads every establishment imported through the read API with its key (from the
// import's results): its content_revision, or 0 when it is not served (404).
func (s *service) served(ctx context.Context, results string) (map[string]int64, error) {
	all, err := keys(results)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(all))
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	err = parallelN(32, len(all), func(i int) error {
		if all[i].key == "" {
			return nil // never served: a draft, or its API disabled
		}
		var err error
		out[i], err = s.revision(ctx, client, all[i].slug, all[i].key)
		return err
	})
	m := make(map[string]int64, len(all))
	for i, k := range all {
		m[k.slug] = out[i]
	}
	return m, err
}

// revision reads an establishment through the read API: its content_revision, 0 when not served.
func (s *service) revision(ctx context.Context, client *http.Client, slug, key string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.api+"/api/v1/establishments/"+slug, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Api-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var doc struct {
		Revision int64 `json:"content_revision"`
	}
	switch err := json.NewDecoder(resp.Body).Decode(&doc); {
	case resp.StatusCode == http.StatusNotFound:
		return 0, nil
	case err != nil || resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("read %s: %s", slug, resp.Status)
	default:
		return doc.Revision, nil
	}
}

// keyed is an establishment imported and its API key, empty when it was never served.
type keyed struct{ slug, key string }

// keys reads the import's results.
func keys(results string) ([]keyed, error) {
	file, err := os.Open(results)
	if err != nil {
		return nil, err
	}
	defer file.Close()
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
	return all, sc.Err()
}
