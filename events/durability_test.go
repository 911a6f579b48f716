package events_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// Environment of the child process started by TestDurableAfterKill.
const (
	childEnv      = "EVENTS_TEST_CHILD"
	childPortEnv  = "EVENTS_TEST_PORT"
	childStoreEnv = "EVENTS_TEST_STORE"
	childReady    = "events-test-child-ready"
)

// TestChildServer is the child process of TestDurableAfterKill: it runs a JetStream server on the
// given port and store directory until it is killed. Without its environment it does nothing.
func TestChildServer(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	port, err := strconv.Atoi(os.Getenv(childPortEnv))
	if err != nil {
		t.Fatalf("port: %v", err)
	}
	opts := natstest.Options(os.Getenv(childStoreEnv))
	opts.Port = port
	natstest.StartWith(t, opts)
	fmt.Println(childReady)
	select {}
}

// startChild runs TestChildServer in a new process storing in dir and returns it once its server
// accepts connections on port.
func startChild(tb testing.TB, dir string, port int) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), childEnv+"=1", childPortEnv+"="+strconv.Itoa(port), childStoreEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatalf("pipe: %v", err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start child: %v", err)
	}
	w.Close()
	tb.Cleanup(func() {
		r.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	ready := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			if s.Text() == childReady {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			tb.Fatalf("child exited before its server was ready; stderr:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		tb.Fatalf("child server not ready within 30s")
	}
	return cmd
}

func TestDurableAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := natstest.FreePort(t)
	child := startChild(t, dir, port)

	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port), nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect to the child: %v", err)
	}
	defer nc.Close()
	st := openStore(t, nc, events.Config{})
	want := map[string][]events.Record{}
	for i := range 20 {
		slug := []string{"alpha", "beta"}[i%2]
		var expected uint64
		if h := want[slug]; len(h) > 0 {
			expected = h[len(h)-1].Sequence
		}
		id := fmt.Sprintf("cmd-%d", i)
		seq := mustAppend(t, st, slug, expected, id, event("t", fmt.Sprintf(`{"i":%d}`, i)))
		rec := events.Record{Sequence: seq, CommandID: id, Establishment: slug, Previous: expected, PreviousKnown: true,
			Events: []events.Envelope{event("t", fmt.Sprintf(`{"i":%d}`, i))}}
		rec.Events[0].ID, rec.Events[0].Establishment = id+"/0", slug
		want[slug] = append(want[slug], rec)
	}

	// Every append above was acknowledged; now the process dies without any shutdown.
	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	if err := child.Wait(); err == nil {
		t.Fatalf("child exited cleanly, want it killed")
	}
	nc.Close()

	s := natstest.StartWith(t, natstest.Options(dir))
	restarted := openStore(t, natstest.Connect(t, s), events.Config{})
	for slug, records := range want {
		got, err := restarted.History(t.Context(), slug)
		if err != nil {
			t.Fatalf("History(%s) after restart: %v", slug, err)
		}
		if diff := cmp.Diff(records, got); diff != "" {
			t.Errorf("History(%s) after restart (-want +got):\n%s", slug, diff)
		}
	}
	// The log goes on where it stopped.
	last := want["alpha"][len(want["alpha"])-1].Sequence
	if _, err := restarted.Append(t.Context(), "alpha", last, "after-restart", []events.Envelope{event("t", `{}`)}); err != nil {
		t.Errorf("Append after restart: %v", err)
	}
}
