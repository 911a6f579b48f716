package usage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// hashOf returns the hex SHA-256 whose first half is k, as an establishment's state keeps a key
// hash.
func hashOf(k Key) string {
	var sum [sha256.Size]byte
	copy(sum[:], k[:])
	return hex.EncodeToString(sum[:])
}

func testReader(t *testing.T, cfg Config) (*Reader, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	cfg.Now = clock.Now
	r, err := newReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, clock
}

func record(at time.Time, quota int, k Key, c Counts) []byte {
	b := AppendHeader(nil, Header{At: at, Quota: quota, Window: time.Hour})
	return AppendRecord(b, k, uint32(c.Requests), uint32(c.NotModified), uint32(c.Limited))
}

// TestCountsLeaveTheWindow: the counts of a key are summed over the last hour, to the minute, and
// a count leaves the sum once it is an hour old, never before 59 minutes.
func TestCountsLeaveTheWindow(t *testing.T) {
	r, clock := testReader(t, Config{Quota: 120})
	k := testKey(1)
	start := clock.Now()
	r.add(record(start, 120, k, Counts{5, 2, 1}))
	clock.Advance(30 * time.Minute)
	r.add(record(clock.Now(), 120, k, Counts{3, 0, 4}))
	for _, c := range []struct {
		at   time.Duration
		want Counts
	}{
		{30 * time.Minute, Counts{8, 2, 5}},
		{59*time.Minute + 59*time.Second, Counts{8, 2, 5}},
		{time.Hour, Counts{3, 0, 4}},
		{89 * time.Minute, Counts{3, 0, 4}},
		{90 * time.Minute, Counts{}},
	} {
		clock.Advance(start.Add(c.at).Sub(clock.Now()))
		got := r.Of(hashOf(k))
		if (Counts{got.Requests, got.NotModified, got.Limited}) != c.want || got.Quota != 120 || got.Window != time.Hour {
			t.Errorf("%v after the first report: got %+v, want %+v of 120 an hour", c.at, got, c.want)
		}
	}
	// A report arriving late, for a time more than the window ago, counts nothing.
	r.add(record(clock.Now().Add(-time.Hour), 120, k, Counts{7, 7, 7}))
	if got := r.Of(hashOf(k)); got.Requests != 0 {
		t.Errorf("a report older than the window counted: %+v", got)
	}
}

// TestReportsAheadOfTheClock: a report taken a little ahead of the reader's clock counts now; one
// taken more than maxSkew ahead is not of a node sharing the clock, and counts nothing.
func TestReportsAheadOfTheClock(t *testing.T) {
	r, clock := testReader(t, Config{})
	k := testKey(1)
	r.add(record(clock.Now().Add(maxSkew+time.Second), 120, k, Counts{Requests: 100}))
	r.add(record(clock.Now().Add(30*time.Second), 120, k, Counts{Requests: 1}))
	if got := r.Of(hashOf(k)); got.Requests != 1 {
		t.Errorf("got %d requests, want the 1 of the report 30 s ahead", got.Requests)
	}
	clock.Advance(time.Hour)
	if got := r.Of(hashOf(k)); got.Requests != 0 {
		t.Errorf("an hour later: got %d requests, want 0", got.Requests)
	}
}

// TestQuotaAsReported: before any report the reader answers the quota it was given (none when
// negative); then the one the read nodes report. A key hash that is empty or malformed has no
// use, and no hash is ever mistaken for another.
func TestQuotaAsReported(t *testing.T) {
	r, clock := testReader(t, Config{Quota: -1, Window: 30 * time.Minute})
	if got := r.Of(""); got != (Usage{Window: 30 * time.Minute}) {
		t.Errorf("before any report: got %+v, want no quota over 30m", got)
	}
	r.add(record(clock.Now(), 60, testKey(1), Counts{Requests: 2}))
	for _, hash := range []string{"", "zz" + hashOf(testKey(1))[2:], hashOf(testKey(1))[:63], hashOf(testKey(2))} {
		if got := r.Of(hash); got != (Usage{Quota: 60, Window: 30 * time.Minute}) {
			t.Errorf("hash %q: got %+v, want no use, 60 per 30m", hash, got)
		}
	}
	if got := r.Of(strings.ToUpper(hashOf(testKey(1)))); got.Requests != 2 {
		t.Errorf("the key's hash in upper case: got %+v, want 2 requests", got)
	}
}

// TestTableBound: however many keys report, the table holds at most MaxKeys; the newest key is
// counted, and the keys forgotten are warned about once a minute at most.
func TestTableBound(t *testing.T) {
	logs := &captureHandler{}
	r, clock := testReader(t, Config{MaxKeys: 64, Logger: slog.New(logs)})
	for i := 1; i <= 1000; i++ {
		r.add(record(clock.Now(), 120, testKey(i), Counts{Requests: int64(i)}))
		if n := len(r.table.keys); n > 64 {
			t.Fatalf("after %d keys the table holds %d, bound 64", i, n)
		}
	}
	if got := r.Of(hashOf(testKey(1000))); got.Requests != 1000 {
		t.Errorf("the newest key: got %+v, want 1000 requests", got)
	}
	if n := logs.count("usage table full"); n != 1 {
		t.Errorf("warnings about the full table within a minute: %d, want 1", n)
	}
	clock.Advance(warnEvery)
	r.add(record(clock.Now(), 120, testKey(1001), Counts{Requests: 1}))
	if n := logs.count("usage table full"); n != 2 {
		t.Errorf("warnings about the full table a minute later: %d, want 2", n)
	}
}

// TestAnotherWindowWarned: read nodes counting over another window than the reader's are warned
// about, and their counts still count.
func TestAnotherWindowWarned(t *testing.T) {
	logs := &captureHandler{}
	r, clock := testReader(t, Config{Window: 2 * time.Hour, Logger: slog.New(logs)})
	r.add(record(clock.Now(), 120, testKey(1), Counts{Requests: 3}))
	if logs.count("another window") != 1 {
		t.Errorf("no warning about the window: %q", logs.messages())
	}
	if got := r.Of(hashOf(testKey(1))); got.Requests != 3 || got.Window != 2*time.Hour {
		t.Errorf("got %+v, want 3 requests over 2h", got)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	err := Config{Window: -time.Second, MaxKeys: -1}.Validate()
	for _, field := range []string{"window", "max keys", "logger"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
	if err := (Config{Window: 1500 * time.Millisecond, Logger: discardLogger()}).Validate(); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("a window of 1.5 s: %v", err)
	}
}

// captureHandler keeps the messages logged.
type captureHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

func (h *captureHandler) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

func (h *captureHandler) count(part string) int {
	n := 0
	for _, m := range h.messages() {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}
