package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// hookLog records the deliveries a receiver got, by establishment.
type hookLog struct {
	mu  sync.Mutex
	got map[string][]int64 // establishment → content_revision of each delivery
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Type string `json:"type"`
		Data struct {
			Establishment string `json:"establishment"`
			Revision      int64  `json:"content_revision"`
		} `json:"data"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &p) == nil && p.Type == "establishment.content_updated" {
		h.mu.Lock()
		h.got[p.Data.Establishment] = append(h.got[p.Data.Establishment], p.Data.Revision)
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookLog) take() map[string][]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = map[string][]int64{}
	return got
}

// webhooksIdle waits until no debounce window is open and no delivery is pending.
func webhooksIdle(t *testing.T, m *Main) {
	t.Helper()
	eventually(t, "webhooks idle", func() bool {
		st, err := m.Webhooks.Stats(t.Context())
		return err == nil && st.Windows == 0 && st.Pending == 0
	})
}

// alterBundle stores under slug, in the generation served, its bundle with another name in the
// establishment document, as a renderer of another version would have written it.
func alterBundle(t *testing.T, kv jetstream.KeyValue, slug string) {
	t.Helper()
	e, err := kv.Get(t.Context(), dockey.Key(slug))
	if err != nil {
		t.Fatal(err)
	}
	var b dockey.Bundle
	if err := dockey.Decode(e.Value(), &b); err != nil {
		t.Fatal(err)
	}
	body := bytes.Replace(b.Establishment.Body, []byte(`"name":"Chez Marcel"`), []byte(`"name":"Chez Marcel (ancien rendu)"`), 1)
	if bytes.Equal(body, b.Establishment.Body) {
		t.Fatalf("no name in %s", b.Establishment.Body)
	}
	b.Establishment.Body, b.Establishment.Gzip = body, nil
	b.Establishment.ETag = fmt.Sprintf(`"%016x"`, xxhash.Sum64(body))
	value, err := json.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), dockey.Key(slug), value); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildUnderReadTraffic runs publisher rebuild while readers read every establishment
// without pause and another establishment is written to. Three establishments were stored by
// "another renderer" (their bundles altered in place). The rebuild is interrupted once, after
// its verification, and run again: it resumes. Throughout, no read fails and no revision goes
// back; afterwards the new generation is served, equal to a replay of the log (verify), the
// altered establishments at a higher revision with one webhook each, every other one with the
// same bytes and revision and no webhook; the old generation is gone, and writes are projected
// into the new one.
func TestRebuildUnderReadTraffic(t *testing.T) {
	hooks := &hookLog{got: map[string][]int64{}}
	receiver := httptest.NewTLSServer(hooks)
	defer receiver.Close()
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22", func(c *Config) {
		c.WebhookWindow, c.WebhookAllowPrivate, c.WebhookRootCAs = time.Second, true, roots
	})

	const n = 9
	slugs := make([]string, n)
	keys := map[string]string{}
	for i := range slugs {
		slugs[i] = fmt.Sprintf("rebuilt-%d", i)
		keys[slugs[i]] = keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slugs[i], []byte(demoLine(t, slugs[i]))))
		if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/"+slugs[i]+"/webhooks", []byte(`{"url": "`+receiver.URL+`/hook"}`)); r.status != 201 {
			t.Fatalf("register: got %d %s", r.status, r.body)
		}
	}
	// Written to while the rebuild runs; it has no webhook.
	const busy = "rebuilt-busy"
	keys[busy] = keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/"+busy, []byte(demoLine(t, busy))))
	altered := slugs[:3]
	for _, slug := range altered {
		alterBundle(t, m.Docs, slug)
	}
	eventually(t, "the altered bundles served", func() bool {
		return strings.Contains(string(m.get(t, "/api/v1/establishments/"+altered[2], keys[altered[2]]).body), "ancien rendu")
	})
	before := map[string]reply{}
	for _, slug := range slugs {
		before[slug] = m.get(t, "/api/v1/establishments/"+slug, keys[slug])
	}
	webhooksIdle(t, m)
	hooks.take()

	// Readers: every establishment in turn, without pause.
	var (
		stop     atomic.Bool
		readers  sync.WaitGroup
		reads    atomic.Int64
		failures = make(chan string, 16)
	)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	for w := range 4 {
		readers.Go(func() {
			seen := map[string]int64{}
			for i := w; !stop.Load(); i++ {
				slug := append(slices.Clone(slugs), busy)[i%(n+1)]
				r, err := tryDo(http.MethodGet, m.HTTPURL+"/api/v1/establishments/"+slug, nil, "X-Api-Key", keys[slug])
				if err != nil || r.status != 200 {
					fail("read %s: %v %d %s", slug, err, r.status, r.body)
					continue
				}
				var doc struct {
					Revision int64 `json:"content_revision"`
				}
				if err := json.Unmarshal(r.body, &doc); err != nil {
					fail("read %s: %v", slug, err)
					continue
				}
				if doc.Revision < seen[slug] {
					fail("%s: revision %d after %d", slug, doc.Revision, seen[slug])
				}
				seen[slug] = doc.Revision
				reads.Add(1)
			}
		})
	}
	// A writer: a new name for the busy establishment every 50 ms.
	busyLine := demoLine(t, busy)
	writes := make(chan struct{})
	var written atomic.Int64
	go func() {
		defer close(writes)
		for i := 0; !stop.Load(); i++ {
			body := strings.Replace(busyLine, `"name":"Chez Marcel"`, fmt.Sprintf(`"name":"Chez Busy %d"`, i), 1)
			if r, err := tryDo(http.MethodPut, m.AdminURL+"/admin/v1/establishments/"+busy, []byte(body),
				"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json"); err != nil || r.status != 200 {
				fail("write: %v %d %s", err, r.status, r.body)
			} else {
				written.Add(1)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	args := []string{"rebuild", "--nats-url", m.NATS.ClientURL(), "--data-dir", dir, "--progress", "none"}
	// The first run is interrupted once the new generation is verified, before the switch.
	ctx, cancel := context.WithCancel(t.Context())
	var first bytes.Buffer
	err := run(ctx, args, io.Discard, cancelOn(&first, "verified generation", cancel), noEnv)
	cancel()
	if err == nil || !strings.Contains(first.String(), "verified generation 2") || strings.Contains(first.String(), "switched") {
		t.Fatalf("interrupted rebuild: got %v\n%s", err, first.String())
	}
	if got := m.Mirror.Stats().Bucket; got != dockey.Bucket {
		t.Fatalf("after the interruption, the mirror serves %s, want %s", got, dockey.Bucket)
	}
	var second bytes.Buffer
	if err := run(t.Context(), args, io.Discard, &second, noEnv); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, second.String())
	}
	out := second.String()
	for _, want := range []string{"resuming the rebuild of generation 2", "verified generation 2", "switched to generation 2", "announced ", "removed generation 1", "done: generation 2 is served"} {
		if !strings.Contains(out, want) {
			t.Errorf("rebuild output lacks %q:\n%s", want, out)
		}
	}
	// Reads go on a little on the new generation.
	eventually(t, "the mirror serves generation 2", func() bool { return m.Mirror.Stats().Bucket == dockey.Bucket+"_2" })
	after := reads.Load()
	eventually(t, "reads after the switch", func() bool { return reads.Load() > after+100 })
	stop.Store(true)
	readers.Wait()
	<-writes
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	// The last write projected: what verify compares is then the whole log.
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/"+busy, []byte(busyLine)); r.status != 200 {
		t.Fatalf("last write: got %d %s", r.status, r.body)
	}
	t.Logf("%d reads, %d writes during the rebuild; the second run said:\n%s", reads.Load(), written.Load(), out)
	if written.Load() == 0 {
		t.Error("no write during the rebuild")
	}

	// The new generation is the log's rendering.
	if err := run(t.Context(), []string{"verify", "--nats-url", m.NATS.ClientURL(), "--data-dir", dir, "--progress", "none"}, io.Discard, io.Discard, noEnv); err != nil {
		t.Errorf("verify after the rebuild: %v", err)
	}
	for _, slug := range slugs {
		now := m.get(t, "/api/v1/establishments/"+slug, keys[slug])
		if slices.Contains(altered, slug) {
			if now.revision(t) <= before[slug].revision(t) || strings.Contains(string(now.body), "ancien rendu") {
				t.Errorf("%s: got revision %d %s, want the log's rendering above revision %d", slug, now.revision(t), now.body, before[slug].revision(t))
			}
		} else if !bytes.Equal(now.body, before[slug].body) || now.header.Get("ETag") != before[slug].header.Get("ETag") {
			t.Errorf("%s changed: %s, was %s", slug, now.body, before[slug].body)
		}
	}
	// One webhook for each altered establishment, at its new revision; none for the others.
	eventually(t, "the altered establishments announced", func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		for _, slug := range altered {
			if len(hooks.got[slug]) == 0 {
				return false
			}
		}
		return true
	})
	webhooksIdle(t, m)
	got := hooks.take()
	for _, slug := range slugs {
		want := 0
		if slices.Contains(altered, slug) {
			want = 1
		}
		if len(got[slug]) != want {
			t.Errorf("%s: %d deliveries %v, want %d", slug, len(got[slug]), got[slug], want)
		} else if want == 1 && got[slug][0] != m.get(t, "/api/v1/establishments/"+slug, keys[slug]).revision(t) {
			t.Errorf("%s: delivery at revision %d, served %s", slug, got[slug][0], m.get(t, "/api/v1/establishments/"+slug, keys[slug]).body)
		}
	}
	// The old generation is gone; writes are projected into the new one.
	js := m.jetStream(t)
	if _, err := js.KeyValue(t.Context(), dockey.Bucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("old generation: got %v, want it removed", err)
	}
	renamed := strings.Replace(demoLine(t, slugs[5]), `"name":"Chez Marcel"`, `"name":"Chez Marcel et fils"`, 1)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slugs[5], []byte(renamed)); r.status != 200 {
		t.Fatalf("write after the rebuild: got %d %s", r.status, r.body)
	}
	if now := m.get(t, "/api/v1/establishments/"+slugs[5], keys[slugs[5]]); !strings.Contains(string(now.body), "Chez Marcel et fils") {
		t.Errorf("after a write with wait=true: got %s", now.body)
	}
	if st := m.admin(t, http.MethodGet, "/admin/v1/status", nil); !strings.Contains(string(st.body), `"documents_generation":2`) {
		t.Errorf("status: got %s, want generation 2", st.body)
	}
}

// cancelOn writes to w and calls cancel once what is written contains marker.
func cancelOn(w *bytes.Buffer, marker string, cancel func()) io.Writer {
	var mu sync.Mutex
	return writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		n, err := w.Write(p)
		if strings.Contains(w.String(), marker) {
			cancel()
		}
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func noEnv(string) string { return "" }

// TestRebuildAbandoned interrupts a rebuild before its switch and abandons it: the generation it
// built is removed, read nodes drop it, and the next rebuild builds another generation number.
func TestRebuildAbandoned(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-abandon", []byte(demoLine(t, "chez-abandon"))))
	args := []string{"rebuild", "--nats-url", m.NATS.ClientURL(), "--data-dir", dir, "--progress", "none"}
	ctx, cancel := context.WithCancel(t.Context())
	var first bytes.Buffer
	err := run(ctx, args, io.Discard, cancelOn(&first, "verified generation", cancel), noEnv)
	cancel()
	if err == nil {
		t.Fatalf("interrupted rebuild: got nil\n%s", first.String())
	}
	eventually(t, "the read node loads generation 2", func() bool {
		st := m.Mirror.Stats()
		return st.Next != nil && st.Next.Bucket == dockey.Bucket+"_2"
	})
	var out bytes.Buffer
	if err := run(t.Context(), append(args, "--abandon"), io.Discard, &out, noEnv); err != nil || !strings.Contains(out.String(), "abandoned the rebuild of generation 2") {
		t.Fatalf("abandon: %v\n%s", err, out.String())
	}
	eventually(t, "the read node drops generation 2", func() bool { return m.Mirror.Stats().Next == nil })
	js := m.jetStream(t)
	if _, err := js.KeyValue(t.Context(), dockey.Bucket+"_2"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("abandoned generation: got %v, want it removed", err)
	}
	if err := run(t.Context(), append(args, "--abandon"), io.Discard, io.Discard, noEnv); err == nil {
		t.Error("abandon with no rebuild under way: got nil, want an error")
	}
	out.Reset()
	if err := run(t.Context(), args, io.Discard, &out, noEnv); err != nil || !strings.Contains(out.String(), "done: generation 3 is served") {
		t.Fatalf("rebuild after an abandon: %v\n%s", err, out.String())
	}
	if r := m.get(t, "/api/v1/establishments/chez-abandon", key); r.status != 200 {
		t.Errorf("read after the rebuild: %d %s", r.status, r.body)
	}
	if got := m.Mirror.Stats().Bucket; got != dockey.Bucket+"_3" {
		t.Errorf("serving %s, want %s_3", got, dockey.Bucket)
	}
}

// TestRebuildChecksTheFilesURLStated runs rebuild with only --data-dir, and with --public-url and
// --http: a statement of another files URL than the projector's is refused before the rebuild
// begins, and again before it resumes, naming both URLs; serve's own --http and --public-url are
// accepted, and so is no statement at all.
func TestRebuildChecksTheFilesURLStated(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-url", []byte(demoLine(t, "chez-url"))))
	files := m.PublicURL()
	rebuild := func(ctx context.Context, out io.Writer, flags ...string) error {
		return run(ctx, append([]string{"rebuild", "--data-dir", dir, "--progress", "none"}, flags...), io.Discard, out, noEnv)
	}
	refused := func(when string) {
		t.Helper()
		for flags, stated := range map[string]string{
			"--public-url https://menus.example.com": "https://menus.example.com",
			"--http 127.0.0.1:1":                     "http://127.0.0.1:1",
		} {
			var out bytes.Buffer
			err := rebuild(t.Context(), &out, strings.Fields(flags)...)
			if err == nil || !strings.Contains(err.Error(), flags+": the projector renders uploaded files under "+files+", not "+stated+":") {
				t.Errorf("%s, rebuild %s: got %v, want a refusal naming %s and %s", when, flags, err, files, stated)
			}
			if strings.Contains(out.String(), "building") || strings.Contains(out.String(), "resuming") {
				t.Errorf("%s, rebuild %s went on:\n%s", when, flags, out.String())
			}
		}
	}
	refused("before a rebuild")
	if st := m.admin(t, http.MethodGet, "/admin/v1/status", nil).json(t); st["documents_generation"] != 1.0 || st["rebuild"] != nil {
		t.Fatalf("after the refusals: status %v, want generation 1 and no rebuild", st)
	}

	// Serve's --http: the rebuild begins; it is interrupted once it verified its generation.
	ctx, cancel := context.WithCancel(t.Context())
	var first bytes.Buffer
	err := rebuild(ctx, cancelOn(&first, "verified generation", cancel), "--http", strings.TrimPrefix(m.HTTPURL, "http://"))
	cancel()
	if err == nil || !strings.Contains(first.String(), "verified generation 2") {
		t.Fatalf("rebuild --http %s, interrupted: got %v\n%s", m.HTTPURL, err, first.String())
	}
	refused("with a rebuild under way")
	// Serve's --public-url: it resumes and finishes.
	var out bytes.Buffer
	if err := rebuild(t.Context(), &out, "--public-url", files+"/"); err != nil || !strings.Contains(out.String(), "done: generation 2 is served") {
		t.Fatalf("rebuild --public-url %s/: got %v\n%s", files, err, out.String())
	}
	out.Reset()
	if err := rebuild(t.Context(), &out); err != nil || !strings.Contains(out.String(), "done: generation 3 is served") {
		t.Fatalf("rebuild with no files URL stated: got %v\n%s", err, out.String())
	}
}
