package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
)

// TestProcessesStartBeforeTheirCluster starts the processes a deployment runs on a three-node NATS
// cluster (one with the writing roles, two read nodes, each connected to another node) before
// the cluster itself, then the cluster. None exits: each waits, says so in its log and, for a
// read node, in its readiness, then runs; and a change made through the first is served by both
// read nodes.
func TestProcessesStartBeforeTheirCluster(t *testing.T) {
	urls, startCluster := natstest.PlanCluster(t)
	roles := [][]string{{roleProjector, roleWebhook, roleClock, roleAdmin}, {roleAPI}, {roleAPI}}
	mains := make([]*Main, len(roles))
	logs := make([]*syncBuffer, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	cancels := make([]context.CancelFunc, len(roles))
	for i, r := range roles {
		logs[i] = &syncBuffer{}
		mains[i] = &Main{Config: Config{
			NATSURL: urls[i], Replicas: 3, Roles: r, SecretKeys: testSecretKeys,
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t)), AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
			Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, KeyQuota: -1, IPQuota: -1,
			PublicURL: "https://menus.example",
		}, Logger: slog.New(slog.NewTextHandler(logs[i], nil))}
		t.Cleanup(mains[i].Close)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cancels[i] = cancel
		wg.Go(func() { errs[i] = mains[i].Open(ctx) })
	}
	// Run before the Close above, should the test end early: no Open still running meanwhile.
	t.Cleanup(func() {
		for _, cancel := range cancels {
			cancel()
		}
		wg.Wait()
	})
	// A read node answers at once: alive, not ready, and what it waits for.
	reader := "http://" + mains[1].Config.HTTPAddr
	eventually(t, "a read node saying what it waits for", func() bool {
		resp, err := http.Get(reader + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Waiting-For") != ""
	})
	if r := do(t, http.MethodGet, reader+"/healthz", nil); r.status != http.StatusOK {
		t.Errorf("healthz while waiting: got %d", r.status)
	}
	startCluster()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d (%s): %v\n%s", i, strings.Join(roles[i], ","), err, logs[i])
		}
		if !strings.Contains(logs[i].String(), "waiting for JetStream") {
			t.Errorf("process %d (%s) never said what it waited for:\n%s\nother:%s", i, strings.Join(roles[i], ","), logs[i], logs[1])
		}
	}
	key := importDemo(t, mains[0])
	for _, m := range mains[1:] {
		eventually(t, "the change served by a read node", func() bool { return m.get(t, est, key).status == http.StatusOK })
		if r := m.read(t, http.MethodGet, "/readyz"); r.status != http.StatusOK {
			t.Errorf("readyz of a running read node: got %d", r.status)
		}
	}
	// The status call says where the log is held: a leader and three replicas.
	st := do(t, http.MethodGet, mains[0].AdminURL+"/admin/v1/status", nil, "Authorization", "Bearer "+testAdminToken)
	place, _ := st.json(t)["log_placement"].(map[string]any)
	if leader, _ := place["leader"].(string); leader == "" || len(place["replicas"].([]any)) != 2 {
		t.Errorf("status: log_placement %v, want a leader and two other replicas", place)
	}
}

// TestPermanentNATSErrorsStopTheStart: what waiting cannot mend ends the start at once, with its
// cause and without the credentials: a wrong password, or replicas on a server without a cluster.
func TestPermanentNATSErrorsStopTheStart(t *testing.T) {
	opts := natstest.Options(t.TempDir())
	opts.Username, opts.Password = "publisher", "right-password"
	srv := natstest.StartWith(t, opts)
	for name, c := range map[string]Config{
		"wrong password":         {NATSURL: strings.Replace(srv.ClientURL(), "nats://", "nats://publisher:wrong-password@", 1), Replicas: 1},
		"replicas on one server": {NATSURL: strings.Replace(srv.ClientURL(), "nats://", "nats://publisher:right-password@", 1), Replicas: 3},
		"replicas embedded":      {Replicas: 3, DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1"},
	} {
		t.Run(name, func(t *testing.T) {
			c.Roles, c.HTTPAddr, c.AdminAddr, c.AdminToken = []string{roleAPI, roleAdmin}, "127.0.0.1:0", "127.0.0.1:0", testAdminToken
			c.DuplicateTTL, c.ClockEvery, c.Today = time.Hour, time.Hour, "2026-11-24"
			m := &Main{Config: c}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			err := m.Open(ctx)
			if err == nil {
				m.Close()
				t.Fatal("Open succeeded")
			}
			if took := time.Since(start); ctx.Err() != nil {
				t.Errorf("Open waited %v for what cannot change: %v", took, err)
			}
			if strings.Contains(err.Error(), "password") {
				t.Errorf("error names a credential: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestWaitTellsTheTruth: ?wait=true says whether the change is served, and answers 202 when it
// is not within its limit, never a plain success. An admin process without the projector follows
// the checkpoints of the projector another process runs.
func TestWaitTellsTheTruth(t *testing.T) {
	srv := natstest.Start(t)
	open := func(wait time.Duration, roles ...string) *Main {
		t.Helper()
		m := &Main{Config: Config{
			NATSURL: srv.ClientURL(), Replicas: 1, Roles: roles, SecretKeys: testSecretKeys,
			HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
			Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, KeyQuota: -1, IPQuota: -1,
			PublicURL: "https://menus.example", WaitLimit: wait,
		}}
		if err := m.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	adminOnly := open(time.Second, roleAdmin)
	// No projector anywhere: the change is accepted, and said not served.
	r := adminOnly.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	if r.status != http.StatusAccepted || !strings.Contains(string(r.body), `"served":false`) {
		t.Fatalf("wait with no projector: got %d %s, want 202 and served false", r.status, r.body)
	}
	// A projector in another process: the wait is answered once it projected the change (it
	// checkpoints every few seconds, within the default limit of 10 s).
	open(0, roleProjector)
	adminOnly = open(0, roleAdmin)
	r = adminOnly.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-redirect", []byte(`{"enabled":false}`))
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"served":true`) {
		t.Errorf("wait with a projector elsewhere: got %d %s, want 200 and served true", r.status, r.body)
	}
}

// TestOneProjectorAtATime: of two processes with the projector role on one NATS, one projects and
// the other stands by, saying so; when the first stops, the second takes over and the changes
// made meanwhile are served.
func TestOneProjectorAtATime(t *testing.T) {
	srv := natstest.Start(t)
	open := func(logs *syncBuffer, roles ...string) *Main {
		t.Helper()
		m := &Main{Config: Config{
			NATSURL: srv.ClientURL(), Replicas: 1, Roles: roles, SecretKeys: testSecretKeys,
			HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
			Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, KeyQuota: -1, IPQuota: -1,
			PublicURL: "https://menus.example", WaitLimit: 20 * time.Second,
		}, Logger: slog.New(slog.NewTextHandler(logs, nil))}
		if err := m.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	firstLogs, secondLogs := &syncBuffer{}, &syncBuffer{}
	first := open(firstLogs, roleProjector, roleAdmin)
	second := open(secondLogs, roleProjector, roleAPI, roleAdmin)
	if first.Projector() == nil || second.Projector() != nil {
		t.Fatalf("projectors: first %v, second %v; want the first only", first.Projector() != nil, second.Projector() != nil)
	}
	eventually(t, "the second standing by", func() bool { return strings.Contains(secondLogs.String(), "standing by") })
	key := importDemo(t, first)
	eventually(t, "the demo served", func() bool { return second.get(t, est, key).status == http.StatusOK })
	if strings.Contains(secondLogs.String(), "projections caught up") {
		t.Errorf("the standby projected:\n%s", secondLogs)
	}

	first.Close()
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), []byte(`"name": "Chez Marcel et fils"`), 1)
	r := second.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", renamed)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"served":true`)) {
		t.Fatalf("change after the first projector stopped: %d %s\n%s", r.status, r.body, secondLogs)
	}
	if got := second.get(t, est, key); !bytes.Contains(got.body, []byte("Chez Marcel et fils")) {
		t.Errorf("the change is not served: %s", got.body)
	}
	if !strings.Contains(secondLogs.String(), "lease taken over") {
		t.Errorf("the second never said it took over:\n%s", secondLogs)
	}
}

// testLeases starts a NATS server and opens its leases bucket.
func testLeases(tb testing.TB) (*server.Server, jetstream.KeyValue) {
	tb.Helper()
	srv := natstest.Start(tb)
	js, err := jetstream.New(natstest.Connect(tb, srv))
	if err != nil {
		tb.Fatal(err)
	}
	leases, err := generation.OpenLeases(tb.Context(), js, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, leases
}

// TestProjectorLeaseLostAndTakenOver: a holder that stops renewing (a process that died) is
// replaced once its lease expires; a process whose lease another took stops projecting, says so
// and stands by, without stopping, until it can take the lease again.
func TestProjectorLeaseLostAndTakenOver(t *testing.T) {
	srv, leases := testLeases(t)
	if _, err := leases.Create(t.Context(), roleProjector, []byte("a-process-that-died")); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m := &Main{Config: Config{
		NATSURL: srv.ClientURL(), Replicas: 1, Roles: []string{roleProjector}, SecretKeys: testSecretKeys,
		Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, PublicURL: "https://menus.example",
	}, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if m.Projector() != nil {
		t.Fatal("the lease of another holder was taken at once")
	}
	deadline := time.Now().Add(generation.LeaseTTL + 5*time.Second)
	for !strings.Contains(logs.String(), "lease taken over") {
		if time.Now().After(deadline) {
			t.Fatalf("the expired lease was not taken over:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Another process takes the lease from under it: it stops, saying why.
	if err := leases.Purge(t.Context(), roleProjector); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Create(t.Context(), roleProjector, []byte("another-process")); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for m.Projector() != nil || !strings.Contains(logs.String(), "holder=another-process") {
		if time.Now().After(deadline) {
			t.Fatalf("the process kept projecting without its lease:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "lease lost: another process holds it") {
		t.Errorf("the loss of the lease was not said:\n%s", logs)
	}
	select {
	case err := <-m.Err():
		t.Fatalf("the process stopped: %v", err)
	default:
	}
}

// TestNodeLossUnderLoad: on a three-node cluster, streams and buckets at three replicas, the NATS
// server leading the event log is killed while two read nodes are read without pause and
// writes go on through the admin API: no read fails, no read node serves a revision older than
// one it served before, a write refused during the election is a 503 retried with its
// idempotency key, writes come back within seconds, and every acknowledged write is served.
func TestNodeLossUnderLoad(t *testing.T) {
	// The receiver of the change webhook: every delivery it gets, by webhook-id.
	var hooksMu sync.Mutex
	hooks := map[string]int{}
	var lastHookRevision int64
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var payload struct {
			Data struct {
				Revision int64 `json:"content_revision"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &payload)
		hooksMu.Lock()
		hooks[r.Header.Get("webhook-id")]++
		lastHookRevision = max(lastHookRevision, payload.Data.Revision)
		hooksMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	roots := receiver.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	servers := natstest.StartCluster(t)
	logs := &syncBuffer{} // every process's
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	open := func(roles ...string) *Main {
		t.Helper()
		m := &Main{Config: Config{
			NATSURL: strings.Join(urls, ","), DataDir: t.TempDir(), Replicas: 3, Roles: roles, SecretKeys: testSecretKeys,
			HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
			Today: "2026-11-24", ClockEvery: time.Hour, DuplicateTTL: time.Hour, KeyQuota: -1, IPQuota: -1,
			PublicURL: "https://menus.example", WebhookWindow: time.Second, WebhookAllowPrivate: true, WebhookRootCAs: roots,
		}, Logger: slog.New(slog.NewTextHandler(logs, nil))}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := m.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	// Two processes with the projector and the webhook roles: one projects, the other stands by;
	// both dispatch webhooks.
	writer := open(roleProjector, roleWebhook, roleClock, roleAdmin)
	open(roleProjector, roleWebhook, roleClock)
	readers := []*Main{open(roleAPI), open(roleAPI)}
	key := importDemo(t, writer)
	if r := writer.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "`+receiver.URL+`/hook"}`)); r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	for _, r := range readers {
		eventually(t, "the demo served", func() bool { return r.get(t, est, key).status == http.StatusOK })
	}
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	type readResult struct{ reads, failed, back int }
	results := make([]readResult, len(readers))
	for i, r := range readers {
		wg.Go(func() {
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := tryDo(http.MethodGet, r.HTTPURL+est, nil, "X-Api-Key", key)
				results[i].reads++
				var doc struct {
					Revision int64 `json:"content_revision"`
				}
				if err != nil || got.status != http.StatusOK || json.Unmarshal(got.body, &doc) != nil {
					results[i].failed++
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if doc.Revision < last {
					results[i].back++
				} else {
					last = doc.Revision
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	var acked, refused, unanswered atomic.Int64
	var lastAcked, pending atomic.Int64
	var longest time.Duration
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), fmt.Appendf(nil, `"name": "Chez Marcel %d"`, i), 1)
			var refusedSince time.Time
			for {
				r, err := tryDo(http.MethodPut, writer.AdminURL+"/admin/v1/establishments/chez-marcel", body,
					"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json", "Idempotency-Key", fmt.Sprintf("loss-%d", i))
				// A write unanswered within the client's timeout may still have been applied: it is
				// retried under the same key, as a 503 is, until the service says which it was.
				if err == nil && r.status == http.StatusOK {
					acked.Add(1)
					lastAcked.Store(int64(i))
					if !refusedSince.IsZero() {
						longest = max(longest, time.Since(refusedSince))
					}
					break
				}
				if err == nil && r.status != http.StatusServiceUnavailable {
					t.Errorf("write %d: %d %s, want 200 or a 503 to retry", i, r.status, r.body)
					return
				}
				if err != nil {
					unanswered.Add(1)
				}
				refused.Add(1)
				if refusedSince.IsZero() {
					refusedSince = time.Now()
				}
				select {
				case <-stop: // still refused at the end: counted as it stands, and may yet be applied
					longest = max(longest, time.Since(refusedSince))
					pending.Store(int64(i))
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	time.Sleep(2 * time.Second)
	place, err := writer.Store.Placement(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	killed := -1
	for i, s := range servers {
		if s.Name() == place.Leader {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("no server leads the log: %+v", place)
	}
	before := acked.Load()
	servers[killed].Shutdown()
	time.Sleep(10 * time.Second)
	close(stop)
	wg.Wait()

	t.Logf("killed %s, the log's leader; writes: %d acknowledged (%d after the kill), %d attempts refused (%d of them unanswered), refused for at most %s; reads: %+v",
		place.Leader, acked.Load(), acked.Load()-before, refused.Load(), unanswered.Load(), longest.Round(time.Millisecond), results)
	for i, r := range results {
		if r.failed > 0 || r.back > 0 || r.reads < 100 {
			t.Errorf("read node %d: %+v, want every read answered, none going back", i+1, r)
		}
	}
	if acked.Load()-before < 10 {
		t.Errorf("%d writes acknowledged in the 10 s after the kill", acked.Load()-before)
	}
	if longest > 8*time.Second {
		t.Errorf("writes refused for %s", longest)
	}
	want := fmt.Sprintf(`"name":"Chez Marcel %d"`, lastAcked.Load())
	orPending := fmt.Sprintf(`"name":"Chez Marcel %d"`, pending.Load())
	var served int64
	for i, r := range readers {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := r.get(t, est, key)
			served = got.revision(t)
			if bytes.Contains(got.body, []byte(want)) || pending.Load() > 0 && bytes.Contains(got.body, []byte(orPending)) {
				break
			}
			if time.Now().After(deadline) {
				stored, _ := tryDo(http.MethodGet, writer.AdminURL+"/admin/v1/establishments/chez-marcel", nil, "Authorization", "Bearer "+testAdminToken)
				var position uint64
				if p := writer.Projector(); p != nil {
					position = p.Position()
				}
				t.Fatalf("read node %d serves revision %d, not the last acknowledged write (%s or %s); the admin API answers %d %.300s; the projector is at %d; the read nodes applied %d and %d; %s; the processes said:\n%s",
					i+1, served, want, orPending, stored.status, stored.body, position, readers[0].Mirror.Applied(), readers[1].Mirror.Applied(),
					streamsState(t, servers[(killed+1)%len(servers)]), logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The change webhook: the last delivery names the revision served, and no delivery came twice
	// although two dispatchers ran.
	deadline := time.Now().Add(20 * time.Second)
	for {
		hooksMu.Lock()
		last, n := lastHookRevision, len(hooks)
		var twice []string
		for id, c := range hooks {
			if c > 1 {
				twice = append(twice, id)
			}
		}
		hooksMu.Unlock()
		if len(twice) > 0 {
			t.Fatalf("deliveries received more than once: %v", twice)
		}
		if last >= served {
			t.Logf("webhook: %d deliveries, each once, the last at revision %d", n, last)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook: the last delivery names revision %d, the read nodes serve %d; the dispatch stream holds %s; the processes said:\n%s",
				last, served, webhookState(t, servers[(killed+1)%len(servers)]), logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// webhookState describes what the webhook's dispatch stream holds, subject by subject, with
// the body of each open window, and the state of the webhook's consumers.
func webhookState(t *testing.T, srv *server.Server) string {
	js, err := jetStreamOf(t, srv)
	if err != nil {
		return err.Error()
	}
	stream, err := js.Stream(t.Context(), webhook.StreamName)
	if err != nil {
		return err.Error()
	}
	info, err := stream.Info(t.Context(), jetstream.WithSubjectFilter(">"))
	if err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("%+v", info.State.Subjects)
	for subject := range info.State.Subjects {
		if strings.HasPrefix(subject, "webhook.window.") {
			if m, err := stream.GetLastMsgForSubject(t.Context(), subject); err == nil {
				out += fmt.Sprintf("; %s at %s: %s %v", subject, m.Time.Format(time.RFC3339Nano), m.Data, m.Header)
			}
		}
	}
	for _, name := range []string{webhook.StreamName, webhook.QueueStreamName, events.SignalStreamName} {
		stream, err := js.Stream(t.Context(), name)
		if err != nil {
			out += "; " + err.Error()
			continue
		}
		for c := range stream.ListConsumers(t.Context()).Info() {
			out += fmt.Sprintf("; consumer %s of %s: pending %d, ack pending %d, redelivered %d, waiting %d, leader %s",
				c.Name, name, c.NumPending, c.NumAckPending, c.NumRedelivered, c.NumWaiting, c.Cluster.Leader)
		}
	}
	return out + fmt.Sprintf("; now %s", time.Now().UTC().Format(time.RFC3339Nano))
}

// streamsState gives the last sequence of every stream and the leader of each.
func streamsState(t *testing.T, srv *server.Server) string {
	js, err := jetStreamOf(t, srv)
	if err != nil {
		return err.Error()
	}
	var out []string
	infos := js.ListStreams(t.Context())
	for info := range infos.Info() {
		out = append(out, fmt.Sprintf("%s last %d leader %s", info.Config.Name, info.State.LastSeq, info.Cluster.Leader))
	}
	if err := infos.Err(); err != nil {
		out = append(out, err.Error())
	}
	return "streams: " + strings.Join(out, ", ")
}

// jetStreamOf returns JetStream on a connection to srv of its own, closed when the test ends.
func jetStreamOf(t *testing.T, srv *server.Server) (jetstream.JetStream, error) {
	return jetstream.New(natstest.Connect(t, srv))
}

// TestRolesSurviveNATSRestart: every role, connected to an external server, carries on once the
// server is stopped and started again (its connections come back, writes and reads work), and no
// stream has more consumers than before: none is added per reconnection.
func TestRolesSurviveNATSRestart(t *testing.T) {
	opts := natstest.Options(t.TempDir())
	opts.Port = natstest.FreePort(t)
	srv := natstest.StartWith(t, opts)
	m := openMain(t, t.TempDir(), "2026-11-22", func(c *Config) { c.NATSURL = srv.ClientURL() })
	key := importDemo(t, m)
	eventually(t, "the demo served", func() bool { return m.get(t, est, key).status == http.StatusOK })
	consumers := func(srv *server.Server) map[string]int {
		nc := natstest.Connect(t, srv)
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		infos := js.ListStreams(t.Context())
		for info := range infos.Info() {
			out[info.Config.Name] = info.State.Consumers
		}
		if err := infos.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := consumers(srv)

	srv.Shutdown()
	srv.WaitForShutdown()
	srv = natstest.StartWith(t, opts)
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Replace(demo, []byte(`"name": "Chez Marcel"`), []byte(`"name": "Chez Marcel et fils"`), 1)
	restarted := time.Now()
	// The roles come back within seconds: the client reconnects every 2 s, and the watches of the
	// mirrors start again at once.
	deadline := restarted.Add(10 * time.Second)
	for {
		r := do(t, http.MethodPut, m.AdminURL+"/admin/v1/establishments/chez-marcel?wait=true", renamed,
			"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json", "Idempotency-Key", "after-restart")
		if r.status == http.StatusOK && bytes.Contains(r.body, []byte(`"served":true`)) {
			t.Logf("a write served %s after the restart", time.Since(restarted).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write served within 10 s of the restart: %d %s", r.status, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := m.get(t, est, key); !bytes.Contains(got.body, []byte("Chez Marcel et fils")) {
		t.Errorf("after the restart: %s", got.body)
	}
	var after map[string]int
	for deadline := time.Now().Add(20 * time.Second); ; {
		// Every consumer back, and none more: none is added per reconnection.
		if after = consumers(srv); maps.Equal(after, before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers before the restart %v, after %v", before, after)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("consumers per stream, before and after the restart: %v, %v", before, after)
}

// tryClient answers within seconds or fails, and does not follow redirects.
var tryClient = &http.Client{
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// tryDo sends a request and returns its answer, for goroutines other than the test's own, which
// must not stop the test on an error.
func tryDo(method, url string, body []byte, header ...string) (reply, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := tryClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}, err
}
