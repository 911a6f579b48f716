package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// lineAnswer is the batch endpoint's answer for one line.
type lineAnswer struct {
	Line   int    `json:"line"`
	Slug   string `json:"slug"`
	Status int    `json:"status"`
	Result *struct {
		Version   uint64 `json:"version"`
		Events    int    `json:"events"`
		Duplicate bool   `json:"duplicate"`
		Created   bool   `json:"created"`
	} `json:"result"`
	APIKey  string   `json:"api_key"`
	Error   string   `json:"error"`
	Details []string `json:"details"`
}

// batchKey is the Idempotency-Key of a batch in the run named run: the same for every try of the
// batch, so that a retry is applied once and answers with what the first try did. A later run
// has keys of its own: it imports what its documents say, even content that an earlier run
// replaced since, and content already in place appends nothing anyway.
func batchKey(run string, body []byte) string {
	sum := sha256.Sum256(append([]byte(run+"\x00"), body...))
	return "imp-" + hex.EncodeToString(sum[:])
}

// send posts a batch until every line has a final answer, and merges the answers into its
// items. A transport error, a 429, 502, 503 or 504, and a line answered 503 are tried again,
// after a backoff or the Retry-After given, up to attempts tries: the batch's key makes the
// lines applied by an earlier try answer as duplicates. Any other failure of the whole request
// is returned, and stops the run: it would recur for every batch. A try under way finishes
// even when ctx is done, since its answer may hold API keys; stop only prevents the next.
func (im *Importer) send(ctx, stop context.Context, b *batch) error {
	if len(b.lines) == 0 {
		return nil
	}
	if stop.Err() != nil {
		return errStopped
	}
	header := http.Header{"Content-Type": {"application/x-ndjson"}, "Idempotency-Key": {batchKey(im.runID, b.body)}}
	defer func() { b.body = nil }() // the collector may keep the batch a while
	uncertain := false              // a try may have applied lines without their answer being read
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		resp, err := im.c.send(rctx, http.MethodPost, ImportPath, header, b.body)
		cancel()
		wait := time.Duration(-1)
		var failure error
		switch {
		case err != nil:
			failure, uncertain = fmt.Errorf("POST %s: %w", ImportPath, err), true
		case resp.status == http.StatusOK:
			var ans struct {
				Results []*lineAnswer `json:"results"`
			}
			if err := json.Unmarshal(resp.body, &ans); err != nil {
				failure, uncertain = fmt.Errorf("POST %s: unreadable answer: %w", ImportPath, err), true
				break
			}
			pending := b.merge(ans.Results, uncertain, attempt == attempts)
			if pending == 0 {
				return nil
			}
			failure = fmt.Errorf("POST %s: %d lines answered 503", ImportPath, pending)
		case resp.status == http.StatusTooManyRequests || resp.status == http.StatusBadGateway ||
			resp.status == http.StatusServiceUnavailable || resp.status == http.StatusGatewayTimeout:
			failure = fmt.Errorf("POST %s: %s", ImportPath, resp.text())
			uncertain = uncertain || resp.status != http.StatusTooManyRequests
			wait = retryAfter(resp.header)
		default:
			return fmt.Errorf("POST %s: %s", ImportPath, resp.text())
		}
		if attempt >= attempts {
			return fmt.Errorf("%w (gave up after %d tries)", failure, attempt)
		}
		if wait < 0 {
			d := im.cfg.Backoff << (attempt - 1)
			wait = d/2 + rand.N(d+1)
		}
		t := time.NewTimer(min(wait, maxWait))
		select {
		case <-t.C:
		case <-stop.Done():
			t.Stop()
			return errStopped
		}
	}
}

// merge records the answers of one try and returns how many lines are to be tried again: those
// answered 503, unless final. A line answered already keeps its first answer, which is the one
// that may hold its API key.
func (b *batch) merge(results []*lineAnswer, uncertain, final bool) (again int) {
	for _, r := range results {
		if r.Line < 1 || r.Line > len(b.lines) {
			continue
		}
		it := &b.items[b.lines[r.Line-1]]
		if it.done {
			continue
		}
		it.answer = r
		if r.Status == http.StatusServiceUnavailable && !final {
			it.uncertain = true
			again++
			continue
		}
		it.done = true
		if r.Result != nil && r.Result.Duplicate && (uncertain || it.uncertain) {
			it.uncertain = true
		} else {
			it.uncertain = false
		}
	}
	return again
}

// retryAfter is the wait a Retry-After header asks for, in seconds or as a date; -1 without one.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return -1
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}
