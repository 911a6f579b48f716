package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/clock"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events/natstest"
)

// consumersByStream returns the number of consumers of every stream of srv.
func consumersByStream(t *testing.T, srv *server.Server) map[string]int {
	t.Helper()
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	streams := js.ListStreams(t.Context())
	for info := range streams.Info() {
		out[info.Config.Name] = info.State.Consumers
	}
	if err := streams.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWholeServiceUnderAConsumerLimit runs every role on a server that allows 20 consumers per
// stream, three times fewer than the establishments: a bulk import, concurrent admin reads, a
// day change and verify all succeed, and the consumer count of every stream is what it was
// with one establishment.
func TestWholeServiceUnderAConsumerLimit(t *testing.T) {
	const limit, n = 20, 60
	srv := natstest.StartLimited(t, limit)
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.NATSURL = srv.ClientURL() })
	slugs := make([]string, n)
	for i := range n {
		slugs[i] = fmt.Sprintf("limite-%d", i)
	}

	// The first establishment: once it is served and the clock has read its record, every role
	// holds the consumers it keeps.
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/"+slugs[0]+"?wait=true", []byte(demoLine(t, slugs[0]))); r.status != http.StatusCreated {
		t.Fatalf("first establishment: got %d %s", r.status, r.body)
	}
	eventually(t, "the clock follows the log", func() bool { return m.ClockRole.Status().Notes > 0 })
	before := consumersByStream(t, srv)

	var lines []string
	for _, slug := range slugs[1:] {
		lines = append(lines, demoLine(t, slug))
	}
	file := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), strings.Join(lines, "\n")+"\n")
	stdout, stderr, err := importRun(t, adminEnv(m), "--batch", "7", "--parallel", "4", "--progress", "none", file)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	for i, r := range results(t, stdout) {
		if r.Status != "created" {
			t.Errorf("line %d: got %+v, want created", i+1, r)
		}
	}

	// Every establishment read at once through the admin API.
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for _, slug := range slugs {
		wg.Go(func() { statuses <- m.admin(t, http.MethodGet, "/admin/v1/establishments/"+slug, nil).status })
	}
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusOK {
			t.Errorf("concurrent admin read: got %d, want 200", status)
		}
	}

	// The next day: the clock starts it for every establishment (the demo has a daily menu), once
	// it has read the calendar of each (on a busy machine it may lag behind the import).
	eventually(t, "the clock read every calendar", func() bool {
		pending, err := m.Store.NotesPending(context.Background(), clock.ReaderName)
		return err == nil && pending == 0
	})
	m.Clock.Set(domain.LocalDate{Year: 2026, Month: 11, Day: 23})
	// A pass may leave establishments whose calendar the clock has not read yet to the next one.
	appended := 0
	eventually(t, "every day started", func() bool {
		pass, err := m.ClockRole.Tick(context.Background())
		if err != nil {
			t.Fatalf("tick: %v", err)
		}
		if pass == nil {
			return false // nothing was due at this tick
		}
		if pass.Failed != 0 {
			t.Errorf("day change: %+v, want no failure", pass)
		}
		appended += pass.Appended
		return appended >= n
	})
	if appended != n {
		t.Errorf("day change: %d days started, want %d", appended, n)
	}

	// verify replays the log and compares every bundle, once the projection caught up.
	last, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Projector().WaitFor(t.Context(), last); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"verify", "--nats-url", srv.ClientURL()}, &out, io.Discard, func(string) string { return "" }); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf(`"checked": %d`, n)) || !strings.Contains(out.String(), `"differences": []`) {
		t.Errorf("verify: got %s, want %d checked and no difference", out.String(), n)
	}

	// No consumer more than before the work. A read done at start-up (the secrets' sweep lists the
	// endpoints) may still have had its consumer then, deleted since: fewer is no leak.
	var after map[string]int
	settled := func() bool {
		after = consumersByStream(t, srv)
		for stream, count := range after {
			if count > before[stream] {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for stream, count := range after {
		if count > before[stream] {
			t.Errorf("stream %s: %d consumers after the work, %d before", stream, count, before[stream])
		}
	}
}
