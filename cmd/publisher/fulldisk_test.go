//go:build fulldisk

package main

// The full-disk test runs the service on a real volume that fills up: a tmpfs of its own, which
// it mounts and grows, so it needs root. It is not part of `go test ./...`; run it with
//
//	go test -tags fulldisk -run TestFullDisk -v ./cmd/publisher
//
// as .ci/run does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/generation"
)

// mountTmpfs mounts a tmpfs of size at dir until the test ends.
func mountTmpfs(tb testing.TB, dir, size string) {
	tb.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Fatalf("mount a tmpfs of %s at %s (the test needs root): %v: %s", size, dir, err, out)
	}
	tb.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func resizeTmpfs(tb testing.TB, dir, size string) {
	tb.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		tb.Fatalf("grow the tmpfs at %s to %s: %v: %s", dir, size, err, out)
	}
}

// bigShop returns the demo establishment under slug with items enough to weigh about 75 kB.
func bigShop(tb testing.TB, demo []byte, slug string, items int) []byte {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(demo, &doc); err != nil {
		tb.Fatal(err)
	}
	doc["slug"] = slug
	version := doc["menu_types"].([]any)[0].(map[string]any)["versions"].([]any)
	section := version[len(version)-1].(map[string]any)["sections"].([]any)[0].(map[string]any)
	template := section["items"].([]any)[0].(map[string]any)
	var list []any
	for i := range items {
		item := map[string]any{}
		for k, v := range template {
			item[k] = v
		}
		words := strings.Repeat(fmt.Sprintf("%s plat %d ", slug, i), 12)
		item["id"] = 1000 + i
		item["name"] = map[string]any{"fr": fmt.Sprintf("Plat %d", i), "en": fmt.Sprintf("Dish %d", i)}
		item["description"] = map[string]any{"fr": words, "en": words}
		item["price"], item["a_la_carte"] = "12.50", true
		list = append(list, item)
	}
	section["items"] = list
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestFullDisk fills a 64 MB volume with imports, grows it, then has another file take its last
// byte: writes are answered 507 saying what is full and accepted again once room is made, without
// a restart; reads answer 200 throughout; verify finds no difference and no acknowledged write is
// lost.
func TestFullDisk(t *testing.T) {
	vol := t.TempDir()
	mountTmpfs(t, vol, "64m")
	dir := filepath.Join(vol, "data")
	m := openMain(t, dir, "2026-11-22", func(c *Config) { c.WaitLimit = 5 * time.Second })
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))
	eventually(t, "demo served", func() bool { return m.get(t, est, key).status == http.StatusOK })

	var reads, failed atomic.Int64
	stopReads := make(chan struct{})
	readsDone := make(chan struct{})
	go func() {
		defer close(readsDone)
		client := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stopReads:
				return
			case <-time.After(20 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, m.HTTPURL+est, nil)
			req.Header.Set("X-Api-Key", key)
			resp, err := client.Do(req)
			reads.Add(1)
			if err != nil {
				failed.Add(1)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
		}
	}()

	acknowledged := map[string]int64{}
	next := 0
	// recovering: while JetStream starts again, a write may also find the event log not
	// answering (503), to be tried again.
	recovering := false
	put := func(query string) reply {
		t.Helper()
		slug := fmt.Sprintf("shop-%d", next)
		r := do(t, http.MethodPut, m.AdminURL+"/admin/v1/establishments/"+slug+query, bigShop(t, demo, slug, 100),
			"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json")
		switch r.status {
		case http.StatusCreated, http.StatusAccepted: // 202: made, not served yet
			acknowledged[slug] = int64(r.json(t)["result"].(map[string]any)["version"].(float64))
			next++
		case http.StatusInsufficientStorage:
		case http.StatusServiceUnavailable:
			if !recovering {
				t.Fatalf("PUT %s: got %d %s, want 201 or 507", slug, r.status, r.body)
			}
		default:
			t.Fatalf("PUT %s: got %d %s, want 201 or 507", slug, r.status, r.body)
		}
		return r
	}

	// Imports until the volume is short.
	var refused reply
	for refused.status == 0 {
		if r := put(""); r.status == http.StatusInsufficientStorage {
			refused = r
		}
		if next > 2000 {
			t.Fatal("2,000 imports of 75 kB into 64 MB and none refused")
		}
	}
	t.Logf("%d imports accepted, then %s", next, refused.body)
	if !strings.Contains(string(refused.body), "the data volume has") {
		t.Errorf("507 body: %s, want what is full", refused.body)
	}

	// The volume grows: writes are accepted again.
	resizeTmpfs(t, vol, "96m")
	grown := time.Now()
	eventually(t, "writes accepted once the volume grew", func() bool { return put("").status == http.StatusCreated })
	t.Logf("a write accepted %s after the volume grew", time.Since(grown).Round(time.Millisecond))

	// Another file takes the volume's last byte, until some stream of the store stops writing.
	filler, err := os.Create(filepath.Join(vol, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(filler, io.LimitReader(zeros{}, 1<<30)); err == nil {
		t.Fatal("a 1 GiB file fitted a 96 MB volume")
	}
	filler.Close()
	if r := put(""); r.status != http.StatusInsufficientStorage {
		t.Errorf("a write on a volume with no byte free: got %d, want 507", r.status)
	}
	// A write of the service's own into its reserve, as the leases' and the projector's are:
	// the volume has no room for it, and the stream stops writing.
	js := m.jetStream(t)
	leases, err := js.KeyValue(t.Context(), generation.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, _ = leases.Put(ctx, "probe", bytes.Repeat([]byte{'x'}, 64<<10))
	cancel()
	eventually(t, "a stream that stopped writing named", func() bool {
		return strings.Contains(m.storage.Status().Reason, "stopped writing")
	})
	t.Logf("while the volume had no byte free: %s", m.storage.Status().Reason)

	// The file goes: writes are accepted and served again.
	if err := os.Remove(filepath.Join(vol, "filler")); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	recovering = true
	eventually(t, "writes accepted once room was made", func() bool { return put("").status == http.StatusCreated })
	accepted := time.Since(freed)
	for {
		if r := put("?wait=true"); r.status == http.StatusCreated && bytes.Contains(r.body, []byte(`"served":true`)) {
			break
		}
		if time.Since(freed) > time.Minute {
			t.Fatalf("no write served within a minute of room made:\n%q", m.Degraded())
		}
	}
	t.Logf("once room was made: a write accepted after %s, one served after %s", accepted.Round(time.Millisecond), time.Since(freed).Round(time.Millisecond))

	close(stopReads)
	<-readsDone
	if failed.Load() > 0 || reads.Load() < 100 {
		t.Errorf("reads: %d of %d failed, want every one answered 200", failed.Load(), reads.Load())
	}
	m.stillUp(t)
	m.findAcknowledged(t, acknowledged)
	m.verifyClean(t, dir)
	t.Logf("%d writes acknowledged and found; %d reads, all 200; verify: no difference", len(acknowledged), reads.Load())
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
