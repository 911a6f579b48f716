package readapi

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
)

// discardWriter is a reusable ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func newDiscardWriter() *discardWriter { return &discardWriter{header: make(http.Header)} }

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

func (w *discardWriter) reset() {
	clear(w.header)
	w.status, w.n = 0, 0
}

// hotPath is a request the read API answers often, and the status it gets.
type hotPath struct {
	name, target string
	header       http.Header
	status       int
}

// hotPaths are the requests that must not allocate once pools are warm.
var hotPaths = []hotPath{
	{"Establishment", "/api/v1/establishments/" + alice, http.Header{"X-Api-Key": {keyAlice}}, http.StatusOK},
	{"MenuDetail", "/api/v1/establishments/" + alice + "/menus/lunch?locale=en", http.Header{"X-Api-Key": {keyAlice}}, http.StatusOK},
	{"NotModified", "/api/v1/establishments/" + alice + "/menus/lunch?locale=en",
		http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {`"other", ` + etag(alice, "menus/lunch.en")}}, http.StatusNotModified},
	{"MenuDetailGzip", "/api/v1/establishments/" + alice + "/menus/lunch?locale=en",
		http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"br;q=1.0, gzip;q=0.8, *;q=0.1"}}, http.StatusOK},
	{"RedirectMenus", "/r/menus?establishment=" + alice + "&menu_type=lunch&locale=en", nil, http.StatusFound},
	{"Unauthorized", "/api/v1/establishments/" + alice, http.Header{"X-Api-Key": {keyBob}}, http.StatusUnauthorized},
	{"NotFound", "/api/v1/establishments/nobody", http.Header{"X-Api-Key": {keyAlice}}, http.StatusNotFound},
	{"JSONLD", "/api/v1/establishments/" + alice + "/jsonld?locale=en", http.Header{"X-Api-Key": {keyAlice}}, http.StatusOK},
	{"JSONLDGzip", "/api/v1/establishments/" + alice + "/jsonld",
		http.Header{"X-Api-Key": {keyAlice}, "Accept-Encoding": {"gzip"}}, http.StatusOK},
}

func newHotRequest(target string, header http.Header) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	return r
}

// hugeQuota is a quota no benchmark or allocation test can spend.
const hugeQuota = 1 << 40

// benchConfig is the configuration of the benchmarks: every quota on, on the real clock, too
// large to refuse anything, so that each request goes through the limiters and the quota fields
// and none is a 429.
func benchConfig() Config {
	return Config{KeyQuota: hugeQuota, IPQuota: hugeQuota, RedirectQuota: hugeQuota}
}

// tallied has s tally each key's use, as it does in service while it reports it (ReportUsage).
func tallied(s *Server) *Server {
	if s.keyQuota != nil {
		s.keyQuota.lim.tallying.Store(true)
	}
	return s
}

// benchmarkHotPath measures the hot path named name on a server whose quotas never refuse,
// tallying use.
func benchmarkHotPath(b *testing.B, name string) {
	i := slices.IndexFunc(hotPaths, func(p hotPath) bool { return p.name == name })
	if i < 0 {
		b.Fatalf("no hot path %s", name)
	}
	p := hotPaths[i]
	benchmarkServer(b, tallied(newTestServer(b, fixtureSource(b), benchConfig())).Handler(), p.target, p.header, p.status)
}

func benchmarkServer(b *testing.B, h http.Handler, target string, header http.Header, status int) {
	r := newHotRequest(target, header)
	w := newDiscardWriter()
	h.ServeHTTP(w, r) // warm the router's parameter pool and the header values
	if w.status != status {
		b.Fatalf("status: got %d, want %d", w.status, status)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
	}
	if w.status != status {
		b.Fatalf("status: got %d, want %d", w.status, status)
	}
}

func BenchmarkGetEstablishment(b *testing.B) {
	benchmarkHotPath(b, "Establishment")
}

func BenchmarkGetMenuDetail(b *testing.B) {
	benchmarkHotPath(b, "MenuDetail")
}

func BenchmarkNotModified(b *testing.B) {
	benchmarkHotPath(b, "NotModified")
}

func BenchmarkRedirectMenus(b *testing.B) {
	benchmarkHotPath(b, "RedirectMenus")
}

func BenchmarkUnauthorized(b *testing.B) {
	benchmarkHotPath(b, "Unauthorized")
}

func BenchmarkGetJSONLD(b *testing.B) {
	benchmarkHotPath(b, "JSONLD")
}

// BenchmarkTooManyRequests measures a refused request: the per-IP quota of one request is spent.
func BenchmarkTooManyRequests(b *testing.B) {
	p := hotPaths[0]
	h := newTestServer(b, fixtureSource(b), Config{IPQuota: 1, Now: newFakeClock().Now}).Handler()
	h.ServeHTTP(newDiscardWriter(), newHotRequest(p.target, p.header))
	benchmarkServer(b, h, p.target, p.header, http.StatusTooManyRequests)
}

// BenchmarkGetEstablishmentQuotasOff is the success path without any quota, the cost of the
// quotas being the difference with BenchmarkGetEstablishment.
func BenchmarkGetEstablishmentQuotasOff(b *testing.B) {
	p := hotPaths[0]
	cfg := Config{KeyQuota: -1, IPQuota: -1, RedirectQuota: -1}
	benchmarkServer(b, newTestServer(b, fixtureSource(b), cfg).Handler(), p.target, p.header, p.status)
}

// BenchmarkGetEstablishmentSpecQuotas is the success path under the specification's quotas, on a
// clock that moves an hour at each request so that the client never runs out.
func BenchmarkGetEstablishmentSpecQuotas(b *testing.B) {
	p := hotPaths[0]
	cfg := Config{Now: steppingClock(defaultWindow)}
	benchmarkServer(b, tallied(newTestServer(b, fixtureSource(b), cfg)).Handler(), p.target, p.header, p.status)
}

// BenchmarkGetEstablishmentAccessLog is the success path with the access log on, written as
// text to nowhere.
func BenchmarkGetEstablishmentAccessLog(b *testing.B) {
	p := hotPaths[0]
	cfg := benchConfig()
	cfg.AccessLog = true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	benchmarkServer(b, newTestServer(b, fixtureSource(b), cfg).Handler(), p.target, p.header, p.status)
}

func BenchmarkGetMenuDetailParallel(b *testing.B) {
	h := tallied(newTestServer(b, fixtureSource(b), benchConfig())).Handler()
	p := hotPaths[1]
	b.ReportAllocs()
	b.ResetTimer() // the fixture's setup is not a request's cost
	b.RunParallel(func(pb *testing.PB) {
		r := newHotRequest(p.target, p.header)
		w := newDiscardWriter()
		for pb.Next() {
			w.reset()
			h.ServeHTTP(w, r)
			if w.status != p.status {
				b.Errorf("status: got %d, want %d", w.status, p.status)
				return
			}
		}
	})
}

// BenchmarkGetEstablishmentParallelClients is the parallel success path of distinct clients:
// each goroutine has its own address and key, as the traffic of many backends would, where
// BenchmarkGetMenuDetailParallel has every goroutine contend for one client's quota state.
func BenchmarkGetEstablishmentParallelClients(b *testing.B) {
	const clients = 64
	h := tallied(newTestServer(b, ipFixture(b, clients), benchConfig())).Handler()
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer() // the fixture's setup is not a request's cost
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) % clients
		slug := fmt.Sprintf("ip-%d", i)
		r := newHotRequest("/api/v1/establishments/"+slug, http.Header{"X-Api-Key": {"ak_" + slug}})
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:4711", i)
		w := newDiscardWriter()
		for pb.Next() {
			w.reset()
			h.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Errorf("status: got %d, want 200", w.status)
				return
			}
		}
	})
}

// BenchmarkLimiterNewClients measures the per-IP quota under a flood of distinct addresses: each
// request adds a client to a full table.
func BenchmarkLimiterNewClients(b *testing.B) {
	l := newLimiter(defaultIPQuota, int64(defaultWindow), 1<<14)
	var k clientKey
	b.ReportAllocs()
	i := uint32(0)
	for b.Loop() {
		i++
		binary.BigEndian.PutUint32(k[:4], i)
		l.take(k, 0)
	}
}

// BenchmarkKeyTooManyRequests measures a request refused by the key's quota, tallied in its use.
func BenchmarkKeyTooManyRequests(b *testing.B) {
	p := hotPaths[0]
	h := tallied(newTestServer(b, fixtureSource(b), Config{KeyQuota: 1, IPQuota: -1, Now: newFakeClock().Now})).Handler()
	h.ServeHTTP(newDiscardWriter(), newHotRequest(p.target, p.header))
	benchmarkServer(b, h, p.target, p.header, http.StatusTooManyRequests)
}

// BenchmarkKeyQuotaTally is the cost of tallying a key's use: one admitted request of a known
// key under its quota, without and with the tally.
func BenchmarkKeyQuotaTally(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "Off", true: "On"}[on], func(b *testing.B) {
			l := newLimiter(hugeQuota, int64(defaultWindow), defaultMaxClients)
			l.tallying.Store(on)
			k := clientKey{1}
			l.take(k, 0)
			b.ReportAllocs()
			for b.Loop() {
				if !l.take(k, 0).allowed {
					b.Fatal("refused")
				}
			}
		})
	}
}
