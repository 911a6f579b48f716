package readapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// limitedServer serves h on a loopback listener bounded by lim, until the test ends.
func limitedServer(tb testing.TB, lim ConnLimits, h http.Handler) (*Listener, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	if lim.Logger == nil {
		lim.Logger = discardLogger()
	}
	l := LimitListener(ln, lim)
	srv := NewHTTPServer(ln.Addr().String(), h)
	srv.ConnState = l.ConnState
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return l, ln.Addr().String()
}

// dialFrom opens a connection to addr from the loopback address from (Linux routes all of
// 127.0.0.0/8 to the loopback interface).
func dialFrom(tb testing.TB, from, addr string) net.Conn {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		tb.Fatalf("dial from %s: %v", from, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// get sends one GET / on c and returns the answer's status and body.
func get(tb testing.TB, c net.Conn) (int, string, error) {
	tb.Helper()
	_ = c.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// awaitOpen waits until the listener counts want connections open.
func awaitOpen(tb testing.TB, l *Listener, want int) {
	tb.Helper()
	for deadline := time.Now().Add(waitTimeout); l.Stats().Open != want; {
		if time.Now().After(deadline) {
			tb.Fatalf("open connections: got %d, want %d", l.Stats().Open, want)
		}
		time.Sleep(time.Millisecond)
	}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// busyHandler answers once release is closed, and says on started when each request began.
func busyHandler(release <-chan struct{}, started chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	})
}

// sendBusy sends a request on c in the background, to be answered once the handler is released.
func sendBusy(tb testing.TB, c net.Conn, started <-chan struct{}) {
	tb.Helper()
	go get(tb, c)
	<-started
}

func TestListenerLimitsEachClient(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{}, 8)
	defer close(release)
	l, addr := limitedServer(t, ConnLimits{Total: 8, PerClient: 2}, busyHandler(release, started))
	sendBusy(t, dialFrom(t, "127.0.0.2", addr), started)
	sendBusy(t, dialFrom(t, "127.0.0.2", addr), started)
	status, body, err := get(t, dialFrom(t, "127.0.0.2", addr))
	if err != nil || status != http.StatusTooManyRequests || body != `{"error":"Too many connections"}` {
		t.Errorf("third connection of one address, two busy: got %d %q (%v), want 429 and the error body", status, body, err)
	}
	other := dialFrom(t, "127.0.0.3", addr)
	sendBusy(t, other, started)
	if got := l.Stats(); got.Refused != 1 || got.Open != 3 {
		t.Errorf("stats: got %+v, want 1 refused and 3 open", got)
	}
}

// TestListenerClientsIdleConnectionsGiveWay: a client at its share whose connections wait for a
// request gets a new one in place of its longest waiting, never a refusal: its idle connections
// cannot keep it, or a user sharing its address, out.
func TestListenerClientsIdleConnectionsGiveWay(t *testing.T) {
	t.Parallel()
	l, addr := limitedServer(t, ConnLimits{Total: 8, PerClient: 2}, okHandler)
	oldest := dialFrom(t, "127.0.0.2", addr)
	awaitOpen(t, l, 1)
	dialFrom(t, "127.0.0.2", addr)
	awaitOpen(t, l, 2)
	if status, body, err := get(t, dialFrom(t, "127.0.0.2", addr)); err != nil || status != http.StatusOK || body != "ok" {
		t.Errorf("third connection of one address, two idle: got %d %q (%v), want 200 ok", status, body, err)
	}
	_ = oldest.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := oldest.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("the client's longest waiting connection: read got %v, want it closed", err)
	}
	if st := l.Stats(); st.Evicted != 1 || st.Refused != 0 || st.Open != 2 {
		t.Errorf("stats: got %+v, want 1 evicted, none refused, 2 open", st)
	}
}

// TestListenerGivesWaitingPlacesToNewConnections: a listener full of connections that wait for
// a request (idle keep-alives, or never a first request) closes the longest waiting one for a new
// client.
func TestListenerGivesWaitingPlacesToNewConnections(t *testing.T) {
	t.Parallel()
	l, addr := limitedServer(t, ConnLimits{Total: 4, PerClient: 1}, okHandler)
	first := dialFrom(t, "127.0.0.2", addr) // never sends a request
	awaitOpen(t, l, 1)
	idle := dialFrom(t, "127.0.0.3", addr) // one request, then kept alive
	if status, _, err := get(t, idle); err != nil || status != http.StatusOK {
		t.Fatalf("keep-alive request: %d, %v", status, err)
	}
	dialFrom(t, "127.0.0.4", addr)
	dialFrom(t, "127.0.0.5", addr)
	awaitOpen(t, l, 4)
	if status, _, err := get(t, dialFrom(t, "127.0.0.6", addr)); err != nil || status != http.StatusOK {
		t.Fatalf("new client of a full listener: got %d (%v), want 200", status, err)
	}
	_ = first.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("the longest waiting connection: read got %v, want it closed", err)
	}
	if status, _, err := get(t, idle); err != nil || status != http.StatusOK {
		t.Errorf("the idle connection, waiting for less long: got %d (%v), want it still served", status, err)
	}
	if st := l.Stats(); st.Evicted != 1 || st.Refused != 0 {
		t.Errorf("stats: got %+v, want 1 evicted, 0 refused", st)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestListenerFullOfBusyConnections: with every connection in a request, a new one is answered
// 503 at once.
func TestListenerFullOfBusyConnections(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(4)
	busy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Done()
		<-release
		io.WriteString(w, "ok")
	})
	l, addr := limitedServer(t, ConnLimits{Total: 4, PerClient: 1}, busy)
	var done sync.WaitGroup
	for _, from := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		c := dialFrom(t, from, addr)
		done.Go(func() {
			if status, _, err := get(t, c); err != nil || status != http.StatusOK {
				t.Errorf("busy request from %s: got %d (%v), want 200 once released", from, status, err)
			}
		})
	}
	started.Wait()
	status, body, err := get(t, dialFrom(t, "127.0.0.6", addr))
	if err != nil || status != http.StatusServiceUnavailable || body != `{"error":"Too many connections"}` {
		t.Errorf("new connection of a busy listener: got %d %q (%v), want 503", status, body, err)
	}
	close(release)
	done.Wait()
	awaitOpen(t, l, 4) // kept alive after their answers
}

func TestListenerTrustedProxiesCountInTotalOnly(t *testing.T) {
	t.Parallel()
	l, addr := limitedServer(t, ConnLimits{Total: 8, PerClient: 1,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}, okHandler)
	for range 3 {
		if status, _, err := get(t, dialFrom(t, "127.0.0.2", addr)); err != nil || status != http.StatusOK {
			t.Fatalf("a trusted proxy's connection: got %d (%v), want 200", status, err)
		}
	}
	awaitOpen(t, l, 3)
}

// TestListenerLogsRefusalsOncePerMinute: a flood from one address is one log line a minute, with
// the count of the connections refused.
func TestListenerLogsRefusalsOncePerMinute(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	logs := &logBuffer{}
	release, started := make(chan struct{}), make(chan struct{}, 1)
	defer close(release)
	_, addr := limitedServer(t, ConnLimits{Total: 4, PerClient: 1, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, busyHandler(release, started))
	sendBusy(t, dialFrom(t, "127.0.0.2", addr), started)
	for range 20 {
		if status, _, _ := get(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusTooManyRequests {
			t.Fatalf("got %d, want 429", status)
		}
	}
	if n := strings.Count(logs.String(), "connections over the limits"); n != 1 {
		t.Errorf("log lines after 20 refusals within a minute: got %d, want 1:\n%s", n, logs)
	}
	clock.Advance(time.Minute)
	get(t, dialFrom(t, "127.0.0.2", addr))
	// The refusal is logged once the connection is closed, which the client may see first.
	for deadline := time.Now().Add(waitTimeout); strings.Count(logs.String(), "connections over the limits") < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("no second log line a minute later:\n%s", logs)
		}
		time.Sleep(time.Millisecond)
	}
	// The first line counts the first refusal; the second the 19 after it and its own.
	if n := strings.Count(logs.String(), "connections over the limits"); n != 2 || !strings.Contains(logs.String(), "refused=20") {
		t.Errorf("after a minute: got %d lines, want 2, the second counting 20 refusals:\n%s", n, logs)
	}
}

// TestListenerRefusalsSayWhatTheAPISays: the answers written before a request is read carry the
// API's error body.
func TestListenerRefusalsSayWhatTheAPISays(t *testing.T) {
	body := string(errorAnswers[tooManyConnections].body)
	for _, refusal := range [][]byte{refusalPerClient, refusalFull} {
		if !strings.HasSuffix(string(refusal), "\r\n\r\n"+body) || !strings.Contains(string(refusal), fmt.Sprintf("Content-Length: %d\r\n", len(body))) {
			t.Errorf("refusal %q: want the body %s and its length", refusal, body)
		}
	}
}

// TestProxiedClientsAreLimitedByTheirAddress: behind a trusted proxy, the client the proxy names
// may have its share of requests in flight, and others theirs.
func TestProxiedClientsAreLimitedByTheirAddress(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	srv := newTestServer(t, fixtureSource(t), Config{IPQuota: -1, KeyQuota: -1,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}, ProxiedClientRequests: 2})
	blocking := srv.limitProxiedClients(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	request := func(client string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/establishments/"+alice, nil)
		r.RemoteAddr = "10.0.0.1:4000"
		r.Header.Set("X-Forwarded-For", client)
		return r
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { blocking.ServeHTTP(httptest.NewRecorder(), request("203.0.113.7")) })
		<-entered
	}
	w := httptest.NewRecorder()
	blocking.ServeHTTP(w, request("203.0.113.7"))
	checkAnswer(t, w, http.MethodGet, errAnswer(http.StatusTooManyRequests, `{"error":"Too many connections"}`))
	wg.Go(func() { blocking.ServeHTTP(httptest.NewRecorder(), request("203.0.113.8")) })
	<-entered // another client's request is served
	close(release)
	wg.Wait()
	if len(srv.proxied.n) != 0 {
		t.Errorf("requests in flight after all ended: %v, want none", srv.proxied.n)
	}
}

// TestListenerLogsAtMostSoManyLinesAMinute: a flood from many addresses logs a bounded number of
// lines a minute, and counts the rest in one line the next minute.
func TestListenerLogsAtMostSoManyLinesAMinute(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	logs := &logBuffer{}
	release, started := make(chan struct{}), make(chan struct{}, 4)
	defer close(release)
	_, addr := limitedServer(t, ConnLimits{Total: 4, PerClient: 1, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, busyHandler(release, started))
	for i := range 4 {
		sendBusy(t, dialFrom(t, fmt.Sprintf("127.0.2.%d", 200+i), addr), started)
	}
	for i := range refusalLogLines + 10 {
		if status, _, _ := get(t, dialFrom(t, fmt.Sprintf("127.0.2.%d", 1+i), addr)); status != http.StatusServiceUnavailable {
			t.Fatalf("got %d, want 503", status)
		}
	}
	clock.Advance(time.Minute)
	get(t, dialFrom(t, "127.0.2.199", addr))
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(logs.String(), "not named"); {
		if time.Now().After(deadline) {
			t.Fatalf("no line counting the refusals not logged:\n%s", logs)
		}
		time.Sleep(time.Millisecond)
	}
	if n := strings.Count(logs.String(), "msg=\"connections over the limits\""); n != refusalLogLines+1 {
		t.Errorf("lines naming an address: got %d, want %d in the first minute and 1 in the next", n, refusalLogLines+1)
	}
	if !strings.Contains(logs.String(), "connections=10 lines_a_minute=60") {
		t.Errorf("the line counting the rest: want 10 refused:\n%s", logs)
	}
}
