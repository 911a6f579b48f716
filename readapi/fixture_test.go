package readapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/opencarte/publisher/projections/dockey"
)

// Keys of the fixture establishments.
const (
	keyAlice = "ak_alice_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
	keyBob   = "ak_bob_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
	keyDan   = "ak_dan_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
	keyQuinn = "ak_quinn_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
)

// Fixture establishments, one per access state.
const (
	alice = "chez-alice"  // active, API on, redirects on, master file, menus lunch and wine-list
	bob   = "bistro-bob"  // active, API on, redirects off, no master file
	dan   = "draft-dan"   // draft, everything else on
	quinn = "quiet-quinn" // active, API off, redirects on, master file
)

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// testDoc returns a document whose body names the slug, resource and revision, so that every
// document of the fixtures is distinct and tells which revision it belongs to.
//
// Bodies are padded to a realistic size and carry their entity tag and gzip coding as the
// projector makes them.
func testDoc(slug, resource string, rev int64) dockey.Document {
	body := fmt.Sprintf(`{"content_revision":%d,"slug":%q,"resource":%q,"text":%q}`, rev, slug, resource,
		strings.Repeat("Velouté de potimarron, crème crue et noisettes. ", 8))
	if strings.HasPrefix(resource, "jsonld.") { // a JSON-LD document holds no revision
		body = fmt.Sprintf(`{"@context":"https://schema.org","@type":"Restaurant","name":%q,"description":%q}`, slug+" "+resource,
			strings.Repeat("Velouté de potimarron, crème crue et noisettes. ", 8))
	}
	return dockey.Document{Body: json.RawMessage(body), ETag: fmt.Sprintf(`"%016x"`, xxhash.Sum64String(body)), Gzip: gzipOf(body)}
}

func gzipOf(body string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(body))
	_ = zw.Close()
	return buf.Bytes()
}

func testVariants(slug, resource string, rev int64) dockey.Variants {
	return dockey.Variants{
		All: testDoc(slug, resource+".all", rev),
		FR:  testDoc(slug, resource+".fr", rev),
		EN:  testDoc(slug, resource+".en", rev),
	}
}

// testBundle returns a complete bundle of slug at rev with the access fields of its fixture.
func testBundle(slug string, rev int64) dockey.Bundle {
	b := dockey.Bundle{
		Slug:                slug,
		Revision:            rev,
		Status:              dockey.StatusActive,
		APIEnabled:          true,
		MenuRedirectEnabled: true,
		MasterMenuURL:       "https://files.example/" + slug + "/master.pdf",
		Redirects: map[string]dockey.Redirect{
			"lunch": {
				FR: "https://files.example/" + slug + "/lunch-fr-1.png",
				EN: "https://files.example/" + slug + "/lunch-en-1.png",
			},
			"wine-list": {FR: "https://files.example/" + slug + "/wine-fr_en-1.pdf"},
		},
		Establishment: testDoc(slug, "establishment", rev),
		Hours:         testDoc(slug, "hours", rev),
		Menus:         testVariants(slug, "menus", rev),
		MenuDetails: map[string]dockey.Variants{
			"lunch":     testVariants(slug, "menus/lunch", rev),
			"wine-list": testVariants(slug, "menus/wine-list", rev),
		},
		JSONLD: dockey.Localized{FR: testDoc(slug, "jsonld.fr", rev), EN: testDoc(slug, "jsonld.en", rev)},
	}
	switch slug {
	case alice:
		b.KeyHash = keyHash(keyAlice)
	case bob:
		b.KeyHash = keyHash(keyBob)
		b.MenuRedirectEnabled = false
		b.MasterMenuURL = ""
		b.JSONLD = dockey.Localized{} // stored before the JSON-LD was rendered
	case dan:
		b.KeyHash = keyHash(keyDan)
		b.Status = dockey.StatusDraft
	case quinn:
		b.APIEnabled = false
	default:
		b.KeyHash = keyHash("ak_" + slug)
	}
	return b
}

// decodeServed decodes the bundle stored under the key of slug, as a mirror's decoder does.
func decodeServed(slug string, value []byte) (*served, error) {
	var d decoder
	return d.decode(slug, value)
}

func mustEntry(tb testing.TB, b dockey.Bundle) *served {
	tb.Helper()
	e, err := newServed(&b, nil)
	if err != nil {
		tb.Fatalf("newEntry(%s): %v", b.Slug, err)
	}
	return e
}

// fakeSource is a fixed documentSource.
type fakeSource map[string]*served

func (f fakeSource) lookup(slug string) *served { return f[slug] }

func fixtureSource(tb testing.TB) fakeSource {
	tb.Helper()
	src := fakeSource{}
	for _, slug := range []string{alice, bob, dan, quinn} {
		src[slug] = mustEntry(tb, testBundle(slug, 7))
	}
	return src
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// readyNow is a closed channel: the fixture servers are ready from the start.
var readyNow = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// newTestServer returns a ready server of src with the settings of cfg; a nil Logger discards.
func newTestServer(tb testing.TB, src documentSource, cfg Config) *Server {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	if err := errors.Join(cfg.validateQuotas()...); err != nil {
		tb.Fatalf("config: %v", err)
	}
	return newServer(src, readyNow, cfg)
}

// fixtureHandler returns the handler of a server of the fixtures with the specification's quotas
// on a clock that stands still.
func fixtureHandler(tb testing.TB) http.Handler {
	tb.Helper()
	return newTestServer(tb, fixtureSource(tb), Config{Now: newFakeClock().Now}).Handler()
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}
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

// steppingClock returns the real time moved step further on every call, so that a client that
// sends one request per call, as the benchmarks do, gets its quota back as fast as it spends it
// and keeps a steady state, whatever the speed of the machine.
func steppingClock(step time.Duration) func() time.Time {
	var calls atomic.Int64
	return func() time.Time { return time.Now().Add(time.Duration(calls.Add(1)) * step) }
}
