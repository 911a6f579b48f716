package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/cmd/publisher/capacity"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/events"
)

// TestLostProjectorLeaseInOneProcess: the projector of a process running every role loses its
// lease to another holder. The process stays up, its reads keep answering, it reports the
// projector standing by, and once the lease can be taken again it projects what was written
// meanwhile.
func TestLostProjectorLeaseInOneProcess(t *testing.T) {
	logs := &syncBuffer{}
	m := testMain(t.TempDir(), "2026-11-22", func(c *Config) { c.WaitLimit = time.Second })
	m.Logger = slog.New(slog.NewTextHandler(logs, nil))
	startMain(t, m)
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	eventually(t, "demo served", func() bool { return m.get(t, est, key).status == http.StatusOK })

	js := m.jetStream(t)
	leases, err := js.KeyValue(t.Context(), generation.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Another holder takes the lease from under the projector.
	if err := leases.Purge(t.Context(), roleProjector); err != nil {
		t.Fatal(err)
	}
	otherRev, err := leases.Create(t.Context(), roleProjector, []byte("another-process"))
	if err != nil {
		t.Fatal(err)
	}
	// The other holder renews its lease, as a live process does, until it goes away.
	renewing, stopRenewing := context.WithCancel(t.Context())
	renewed := make(chan uint64)
	go func() {
		rev := otherRev
		defer func() { renewed <- rev }()
		for events.Sleep(renewing, generation.LeaseRenew) == nil {
			if r, err := leases.Update(t.Context(), roleProjector, []byte("another-process"), rev); err == nil {
				rev = r
			}
		}
	}()
	eventually(t, "projector stopped", func() bool { return m.Projector() == nil })
	eventually(t, "standing by said", func() bool { return strings.Contains(logs.String(), "standing by") })

	// The process goes on: reads answer from memory, writes are accepted (the change waits for
	// a projector: 202, not served yet).
	for range 20 {
		if r := m.get(t, est, key); r.status != http.StatusOK {
			t.Fatalf("read while the projector stands by: got %d %s", r.status, r.body)
		}
	}
	renamed := bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), []byte(`"name": "Chez Marcel et fils"`), 1)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", renamed); r.status != http.StatusAccepted {
		t.Fatalf("write while the projector stands by: got %d %s, want 202 (accepted, not served)", r.status, r.body)
	}
	if r := m.get(t, est, key); r.status != http.StatusOK || bytes.Contains(r.body, []byte("et fils")) {
		t.Fatalf("read while the projector stands by: got %d %s, want the documents as they were", r.status, r.body)
	}
	m.stillUp(t)

	// The other holder goes away: the projector takes the lease again and projects the change.
	stopRenewing()
	if err := leases.Delete(t.Context(), roleProjector, jetstream.LastRevision(<-renewed)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(generation.LeaseTTL + 10*time.Second)
	for !bytes.Contains(m.get(t, est, key).body, []byte("Chez Marcel et fils")) {
		if time.Now().After(deadline) {
			t.Fatalf("the change written while standing by was not projected once the lease was free:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m.Projector() == nil {
		t.Error("projecting again, but Projector() is nil")
	}
}

// noisePNG returns a real PNG of about n bytes whose pixels are random, so that it does not
// compress.
func noisePNG(tb testing.TB, n int) []byte {
	tb.Helper()
	side := int(math.Sqrt(float64(n) / 4))
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	if _, err := rand.Read(img.Pix); err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestStorageShortRefusesWritesAndRecovers fills a small store with uploads and imports: writes
// are refused with 507 and a message saying what is full, before the store itself runs out;
// reads answer 200 throughout; the process stays up; once room is made (unreferenced files
// collected), writes are accepted again without a restart; verify finds no difference and no
// acknowledged write is lost.
func TestStorageShortRefusesWritesAndRecovers(t *testing.T) {
	var ahead atomic.Int64 // how far the write side's clock runs ahead, for files to age
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22", func(c *Config) {
		c.NATSMaxStore = 24 << 20
		c.StorageReserve = 6 << 20
		c.FileGrace = time.Hour
		c.WaitLimit = 2 * time.Second
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	eventually(t, "demo served", func() bool { return m.get(t, est, key).status == http.StatusOK })
	// Every write acknowledged, with its version, to be found again at the end.
	acknowledged := map[string]int64{}
	importShop := func(slug string) reply {
		t.Helper()
		doc := bytes.Replace(demo, []byte(`"slug": "chez-marcel"`), []byte(`"slug": "`+slug+`"`), 1)
		r := m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slug, doc)
		if r.status == http.StatusCreated {
			acknowledged[slug] = int64(r.json(t)["result"].(map[string]any)["version"].(float64))
		}
		return r
	}
	for i := range 3 {
		if r := importShop(fmt.Sprintf("before-%d", i)); r.status != http.StatusCreated {
			t.Fatalf("import before the store fills: %d %s", r.status, r.body)
		}
	}

	// Reads go on, every 10 ms, all along.
	readsDone := make(chan []int)
	stopReads := make(chan struct{})
	go func() {
		var bad []int
		client := &http.Client{Timeout: 5 * time.Second}
		for n := 0; ; n++ {
			select {
			case <-stopReads:
				readsDone <- bad
				return
			case <-time.After(10 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, m.HTTPURL+est, nil)
			req.Header.Set("X-Api-Key", key)
			resp, err := client.Do(req)
			if err != nil {
				bad = append(bad, -1)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				bad = append(bad, resp.StatusCode)
			}
		}
	}()

	// Uploads until refused.
	var refusal reply
	uploaded := 0
	for uploaded < 40 {
		r := m.upload(t, http.MethodPost, "/admin/v1/files", "image/png", noisePNG(t, 1<<20))
		if r.status != http.StatusCreated {
			refusal = r
			break
		}
		uploaded++
	}
	if refusal.status != http.StatusInsufficientStorage {
		t.Fatalf("uploads into a 24 MiB store: after %d, got %d %s, want 507", uploaded, refusal.status, refusal.body)
	}
	t.Logf("%d uploads of 1 MiB accepted, then %d %s", uploaded, refusal.status, refusal.body)
	if b := refusal.json(t); b["error"] != "Insufficient storage" || !strings.Contains(fmt.Sprint(b["details"]), "event store holds") {
		t.Errorf("507 body: got %s, want the error and what is full", refusal.body)
	}

	// Imports: refused too, each saying so.
	for i := range 10 {
		if r := importShop(fmt.Sprintf("shop-%d", i)); r.status != http.StatusInsufficientStorage {
			t.Fatalf("import into a full store: got %d %s, want 507", r.status, r.body)
		}
	}
	ready := do(t, http.MethodGet, m.HTTPURL+"/readyz", nil)
	if ready.status != http.StatusOK || !bytes.Contains(ready.body, []byte(`"degraded":["storage (since `)) {
		t.Errorf("/readyz while writes are refused: got %d %s, want 200 naming storage", ready.status, ready.body)
	}
	m.verifyClean(t, dir)

	// Room is made: the files nothing refers to are collected once past their grace period.
	ahead.Store(int64(2 * time.Hour))
	if r := m.admin(t, http.MethodPost, "/admin/v1/files/collect", nil); r.status != http.StatusOK {
		t.Fatalf("collect: %d %s", r.status, r.body)
	}
	eventually(t, "writes accepted again", func() bool { return importShop("after-room").status == http.StatusCreated })
	close(stopReads)
	if bad := <-readsDone; len(bad) > 0 {
		t.Errorf("reads not answered 200 while the store filled and emptied: %v", bad)
	}
	eventually(t, "storage no longer degraded", func() bool {
		return !strings.Contains(strings.Join(m.Degraded(), "\n"), "storage")
	})
	m.stillUp(t)
	m.findAcknowledged(t, acknowledged)
	if len(acknowledged) != 4 {
		t.Errorf("acknowledged writes: %v, want the three before and the one after", acknowledged)
	}
	m.verifyClean(t, dir)
}

// stillUp fails the test if m reported a failure it cannot go on without.
func (m *Main) stillUp(tb testing.TB) {
	tb.Helper()
	select {
	case err := <-m.Err():
		tb.Fatalf("the process stopped: %v", err)
	default:
	}
}

// findAcknowledged checks that every establishment written, by slug, is found at its
// acknowledged version or later.
func (m *Main) findAcknowledged(tb testing.TB, acknowledged map[string]int64) {
	tb.Helper()
	for slug, version := range acknowledged {
		got := m.admin(tb, http.MethodGet, "/admin/v1/establishments/"+slug, nil)
		if v, _ := got.json(tb)["version"].(float64); got.status != http.StatusOK || int64(v) < version {
			tb.Errorf("%s, acknowledged at version %d: got %d %.200s", slug, version, got.status, got.body)
		}
	}
}

// verifyClean runs verify against m's embedded server, storing in dir, and fails the test on a
// difference.
func (m *Main) verifyClean(tb testing.TB, dir string) {
	tb.Helper()
	var out bytes.Buffer
	if err := run(tb.Context(), []string{"verify", "--nats-url", m.NATS.ClientURL(), "--data-dir", dir, "--progress", "none"}, &out, io.Discard, noEnv); err != nil {
		tb.Errorf("verify: %v\n%s", err, out.String())
	}
}

// Environment of the child process of TestConnectionFloodLeavesTheServiceUp.
const (
	floodChildEnv   = "PUBLISHER_TEST_FLOOD_CHILD"
	floodDirEnv     = "PUBLISHER_TEST_FLOOD_DIR"
	floodFDLimitEnv = "PUBLISHER_TEST_FLOOD_FDS"
)

// TestFloodChild is the child process of TestConnectionFloodLeavesTheServiceUp: the whole
// service, on an embedded NATS, with its open file limit set low, until it is killed. Without its
// environment it does nothing.
func TestFloodChild(t *testing.T) {
	if os.Getenv(floodChildEnv) != "1" {
		return
	}
	fds, err := strconv.ParseUint(os.Getenv(floodFDLimitEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: fds, Max: fds}); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"serve", "--demo", "--today", "2026-11-22",
		"--data-dir", os.Getenv(floodDirEnv), "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1",
		"--admin-token", testAdminToken, "--quota-ip", "-1", "--quota-key", "-1", "--clock-interval", "1h"},
		os.Stdout, os.Stderr, noEnv)
	t.Fatalf("serve ended: %v", err)
}

// TestConnectionFloodLeavesTheServiceUp runs the service in a process whose open file limit is
// low, and floods its read API with idle connections, from one address and then from many: reads
// from another address are answered, the admin API too, and the process stays up.
func TestConnectionFloodLeavesTheServiceUp(t *testing.T) {
	childFDs, flood := uint64(1024), 2000
	if parent := capacity.OpenFileLimit(); parent < 5000 {
		// This process needs twice the flood in descriptors: scale it to what it may open.
		childFDs, flood = parent/5, int(parent/5)*2
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), floodChildEnv+"=1", floodDirEnv+"="+t.TempDir(), floodFDLimitEnv+"="+strconv.FormatUint(childFDs, 10))
	stdout := &syncBuffer{}
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	logs := &syncBuffer{}
	urls := make(chan [2]string, 1)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			line := s.Text()
			logs.Write([]byte(line + "\n"))
			if strings.Contains(line, "publisher started") {
				urls <- [2]string{logField(line, "read_api"), logField(line, "admin_api")}
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	var readAPI, adminAPI string
	select {
	case u := <-urls:
		readAPI, adminAPI = u[0], u[1]
	case err := <-exited:
		t.Fatalf("the service exited at start: %v\n%s", err, logs)
	case <-time.After(time.Minute):
		t.Fatalf("the service did not start within a minute:\n%s", logs)
	}
	var key string
	eventually(t, "the demo's key printed", func() bool {
		key = demoKey(stdout.String())
		return key != ""
	})
	host := strings.TrimPrefix(readAPI, "http://")

	check := func(phase string) {
		t.Helper()
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var slowest time.Duration
		for range 20 {
			req, _ := http.NewRequest(http.MethodGet, readAPI+est, nil)
			req.Header.Set("X-Api-Key", key)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s: a read from another address: %v\n%s", phase, err, logs)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			slowest = max(slowest, time.Since(start))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: a read from another address: got %d, want 200", phase, resp.StatusCode)
			}
		}
		r := do(t, http.MethodGet, adminAPI+"/admin/v1/status", nil, "Authorization", "Bearer "+testAdminToken)
		if r.status != http.StatusOK {
			t.Fatalf("%s: the admin API: got %d %s, want 200", phase, r.status, r.body)
		}
		select {
		case err := <-exited:
			t.Fatalf("%s: the service exited: %v\n%s", phase, err, logs)
		default:
		}
		t.Logf("%s: 20 reads answered 200, the slowest in %s; the admin API answered", phase, slowest.Round(time.Microsecond))
	}

	// One address holds as many idle connections as it can.
	held := holdConnections(t, host, []string{"127.0.0.76"}, flood)
	check(fmt.Sprintf("%d connections from one address (%d held open)", flood, held))
	if !strings.Contains(logs.String(), "connections over the limits") || !strings.Contains(logs.String(), "client=127.0.0.76/32") {
		t.Errorf("the refusals of the flooding address were not logged:\n%s", logs)
	}
	if n := strings.Count(logs.String(), "connections over the limits"); n > 2 {
		t.Errorf("the refusals were logged %d times, want once per address per minute", n)
	}

	// Many addresses, each within its share, more than the listener holds.
	var many []string
	for i := 1; i <= 20; i++ {
		many = append(many, fmt.Sprintf("127.0.1.%d", i))
	}
	held = holdConnections(t, host, many, flood)
	check(fmt.Sprintf("%d more connections from %d addresses (%d held open)", flood, len(many), held))
}

// holdConnections opens n connections to addr from the addresses from, in turn, and keeps them
// open and idle until the test ends; it returns how many the server still holds open.
func holdConnections(tb testing.TB, addr string, from []string, n int) int {
	tb.Helper()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i%len(from)])}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue // refused by a server that could not accept it: counted below
		}
		conns = append(conns, c)
	}
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	// A connection the server refused or closed reads its answer or its end at once.
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	return open
}

// logField returns the value of key in a text log line.
func logField(line, key string) string {
	_, rest, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return strings.Trim(v, `"`)
}

// demoKey finds the API key the demo prints.
func demoKey(out string) string {
	i := strings.Index(out, "pk_")
	if i < 0 {
		return ""
	}
	end := i
	for end < len(out) && (out[end] == '_' || 'a' <= out[end] && out[end] <= 'z' || 'A' <= out[end] && out[end] <= 'Z' || '0' <= out[end] && out[end] <= '9' || out[end] == '-') {
		end++
	}
	return out[i:end]
}

// TestStoppedJetStreamIsStartedAgain: the embedded server's JetStream stops (as a server that ran
// out of room may stop it): reads go on, writes are refused with 507 saying so, and the service
// starts JetStream again, after which writes are accepted and served.
func TestStoppedJetStreamIsStartedAgain(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.WaitLimit = 2 * time.Second })
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	eventually(t, "demo served", func() bool { return m.get(t, est, key).status == http.StatusOK })

	if err := m.NATS.ShutdownJetStream(); err != nil {
		t.Fatal(err)
	}
	if r := m.get(t, est, key); r.status != http.StatusOK {
		t.Errorf("a read while JetStream is stopped: got %d", r.status)
	}
	renamed := bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), []byte(`"name": "Chez Marcel et fils"`), 1)
	deadline := time.Now().Add(time.Minute)
	for {
		r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", renamed)
		if r.status == http.StatusOK && bytes.Contains(r.body, []byte(`"served":true`)) {
			break
		}
		if r.status != http.StatusInsufficientStorage && r.status != http.StatusServiceUnavailable && r.status != http.StatusOK && r.status != http.StatusAccepted {
			t.Fatalf("a write while JetStream starts again: got %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write served within a minute of JetStream stopping: %d %s; degraded %q", r.status, r.body, m.Degraded())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !m.NATS.JetStreamEnabled() {
		t.Error("JetStream not started again")
	}
	if r := m.get(t, est, key); r.status != http.StatusOK || !bytes.Contains(r.body, []byte("et fils")) {
		t.Errorf("the change made once JetStream started again: got %d %s", r.status, r.body)
	}
}
