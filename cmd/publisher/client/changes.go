package client

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

const changesSynopsis = `publisher changes [--after CURSOR] [--limit N] [--follow] [--json] [flags]

Prints the changes feed of every establishment (GET /admin/v1/changes), one line per change:
"<slug> <content_revision> served|unserved <resources, comma-separated>", or with --json the
entry as the admin API gives it. Without --after it starts with a full sync, every
establishment's current state, then goes on with the changes. It stops once caught up (a
page with no change that does not move the cursor), or with --follow waits for changes (60 s
long polls) until interrupted, asking again when the admin API does not answer. The cursor
to resume from is printed on stderr after each page: pass it as --after.`

// followWait is how long one request of --follow waits for a change.
const followWait = 60 * time.Second

// Changes is the changes command: it pages through the changes feed and prints each change.
func Changes(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("changes", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	after := fs.String("after", "", "cursor to resume from, as printed on stderr (default: a full sync first)")
	limit := fs.Int("limit", 1000, "establishments per page, 1 to 1000")
	follow := fs.Bool("follow", false, "keep waiting for changes until interrupted")
	asJSON := fs.Bool("json", false, "print each change as a JSON object, one per line")
	fs.Usage = envflag.Usage(fs, changesSynopsis)
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return envflag.Usagef("changes", "takes no arguments, got %q", fs.Args())
	case *limit < 1 || *limit > 1000:
		return envflag.Usagef("changes", "--limit %d: want 1 to 1000", *limit)
	}
	c, err := api.client("changes")
	if err != nil {
		return err
	}
	c.http.Timeout = followWait + 30*time.Second
	cursor, pause := *after, time.Duration(0)
	for {
		page, err := c.changes(ctx, cursor, *limit, *follow)
		if *follow && ctx.Err() != nil {
			return nil // interrupted: the last cursor is printed
		}
		var again *unanswered
		if *follow && errors.As(err, &again) {
			pause = nextPause(pause, again.wait)
			fmt.Fprintf(stderr, "changes: %v; trying again in %s\n", err, pause)
			if sleep(ctx, pause) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("changes: %w", err)
		}
		pause = 0
		if err := printChanges(stdout, page.Changes, *asJSON); err != nil {
			return err
		}
		last := cursor
		cursor = page.Next
		fmt.Fprintln(stderr, "cursor:", cursor)
		if len(page.Changes) == 0 && cursor == last && !*follow {
			return nil // caught up
		}
	}
}

// Pauses of --follow before it asks again an admin API that did not answer.
const (
	firstPause = time.Second
	maxPause   = 30 * time.Second
)

// unanswered is a request of the feed worth making again: no answer, a 429, 502, 503 or 504;
// wait is the Retry-After given, -1 without one.
type unanswered struct {
	err  error
	wait time.Duration
}

func (u *unanswered) Error() string { return u.err.Error() }
func (u *unanswered) Unwrap() error { return u.err }

// nextPause is the pause after pause when a request failed again: the Retry-After given, or
// twice the last, from firstPause to maxPause.
func nextPause(pause, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, maxPause)
	}
	return min(max(2*pause, firstPause), maxPause)
}

// sleep waits d, or until ctx is done, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// changesPage is a page of the feed, its entries kept as they came.
type changesPage struct {
	Changes []json.RawMessage `json:"changes"`
	Next    string            `json:"next"`
}

// changes asks the feed for the page after cursor; wait asks it to wait for a change.
func (c *Client) changes(ctx context.Context, cursor string, limit int, wait bool) (changesPage, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("after", cursor)
	}
	if wait {
		q.Set("wait", followWait.String())
	}
	path := "/admin/v1/changes?" + q.Encode()
	resp, err := c.send(ctx, http.MethodGet, path, nil, nil)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		err = fmt.Errorf("no admin API at %s (is serve running? --admin-url says where it is): %w", c.base, err)
		return changesPage{}, &unanswered{err: err, wait: -1}
	case err != nil:
		return changesPage{}, &unanswered{err: err, wait: -1}
	case resp.status == http.StatusTooManyRequests || resp.status == http.StatusBadGateway ||
		resp.status == http.StatusServiceUnavailable || resp.status == http.StatusGatewayTimeout:
		return changesPage{}, &unanswered{err: fmt.Errorf("GET %s: %s", path, resp.text()), wait: retryAfter(resp.header)}
	case resp.status/100 != 2:
		return changesPage{}, fmt.Errorf("GET %s: %s", path, resp.text())
	}
	body := resp.body
	var p changesPage
	if err := json.Unmarshal(body, &p); err != nil {
		return changesPage{}, fmt.Errorf("the admin API's answer: %w", err)
	}
	return p, nil
}

// printChanges writes one line per change.
func printChanges(w io.Writer, changes []json.RawMessage, asJSON bool) error {
	for _, raw := range changes {
		if asJSON {
			if _, err := fmt.Fprintf(w, "%s\n", raw); err != nil {
				return err
			}
			continue
		}
		var c struct {
			Establishment string   `json:"establishment"`
			Revision      int64    `json:"content_revision"`
			Resources     []string `json:"resources"`
			Served        bool     `json:"served"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("the admin API's answer: %w", err)
		}
		served := "served"
		if !c.Served {
			served = "unserved"
		}
		if _, err := fmt.Fprintf(w, "%s %d %s %s\n", c.Establishment, c.Revision, served, strings.Join(c.Resources, ",")); err != nil {
			return err
		}
	}
	return nil
}
