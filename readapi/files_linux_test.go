package readapi

// Tests of the turns to send files against real clients over loopback. Linux routes the whole of
// 127.0.0.0/8 to the loopback interface, so that a test can be several client addresses at once.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// storedFile returns size random bytes and their file name, the digest of the bytes.
func storedFile(size int) (data []byte, name string) {
	data = make([]byte, size)
	rand.Read(data)
	sum := sha256.Sum256(data)
	return data, "sha256-" + hex.EncodeToString(sum[:])
}

// startFileServer serves the files of src over loopback with the timeouts of NewHTTPServer, a
// cache of cacheBytes and the pace p, and returns the server and its address. Its connections
// close in cleanup.
func startFileServer(tb testing.TB, src FileSource, cacheBytes int64, p sendPace) (*Server, string) {
	tb.Helper()
	s := newTestServer(tb, fixtureSource(tb), Config{Files: src, FileCacheBytes: cacheBytes})
	s.files.pace = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := NewHTTPServer("", s.Handler())
	go hs.Serve(ln)
	tb.Cleanup(func() { hs.Close() })
	return s, ln.Addr().String()
}

// dialer returns a dialer whose connections leave from address from, with a receive buffer of
// rcvbuf bytes when rcvbuf is positive, set before connecting so that the window the client
// offers is small from the start.
func dialer(from string, rcvbuf int) *net.Dialer {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var err error
			if cerr := c.Control(func(fd uintptr) {
				err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			}); cerr != nil {
				return cerr
			}
			return err
		}
	}
	return d
}

// stalledGet sends a GET of path from address from with a receive buffer of a few kilobytes and
// never reads the answer, as a client that holds a connection only to hold a turn. The
// connection closes in cleanup.
func stalledGet(tb testing.TB, addr, from, path string) net.Conn {
	tb.Helper()
	conn, err := dialer(from, 4096).Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: files.test\r\n\r\n", path); err != nil {
		tb.Fatal(err)
	}
	return conn
}

// clientFrom returns an HTTP client whose connections leave from address from.
func clientFrom(from string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dialer(from, 0).DialContext}}
}

// turnsTaken returns how many turns to send a file are taken.
func turnsTaken(s *Server) int {
	t := s.files.transfers
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
}

// awaitTurns waits until want turns are taken, failing after a deadline.
func awaitTurns(tb testing.TB, s *Server, want int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for got := turnsTaken(s); got != want; got = turnsTaken(s) {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %d turns taken, want %d", within, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// getWhole asks for file name with c, reading the answer at rate bytes a second (as fast as it
// comes when 0), and checks that it is 200 with the whole file.
func getWhole(tb testing.TB, c *http.Client, addr, name string, size int, rate int64) {
	tb.Helper()
	resp, err := c.Get("http://" + addr + "/files/" + name)
	if err != nil {
		tb.Fatalf("get %s: %v", name, err)
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if rate > 0 {
		body = &slowReader{r: body, rate: rate, start: time.Now()}
	}
	h := sha256.New()
	n, err := io.Copy(h, body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if err != nil || n != int64(size) {
		tb.Fatalf("read %d bytes (%v), want %d", n, err, size)
	}
	if got := "sha256-" + hex.EncodeToString(h.Sum(nil)); got != name {
		tb.Fatalf("got the bytes of %s, want %s", got, name)
	}
}

// fileCase is a way a large file is sent: from a memory file with sendfile(2) when cached is
// true, else streamed from the store.
type fileCase struct {
	name       string
	cacheBytes int64
	cached     bool
}

// fileCases are the two ways a large file is sent, through the same turns.
var fileCases = []fileCase{
	{"streamed", -1, false},          // no cache
	{"memory file", 128 << 20, true}, // an eighth of it takes the file
}

// check fails if the file name is not sent the way tc says.
func (tc fileCase) check(tb testing.TB, s *Server, name string) {
	tb.Helper()
	e, _, ok := s.files.cache.get(name)
	if ok {
		defer s.files.cache.release(e)
	}
	if got := ok && e.mem != nil; got != tc.cached {
		tb.Errorf("file in a memory file: %v, want %v", got, tc.cached)
	}
}

// TestClientsThatNeverReadLeaveTurnsToOthers fills the turns a few addresses may hold with
// connections that ask for a large file and never read it; a client from another address still
// gets the whole file, streamed from the store or sent from a memory file.
func TestClientsThatNeverReadLeaveTurnsToOthers(t *testing.T) {
	// Larger than the socket buffers of loopback can take in: each sender stays blocked.
	data, file := storedFile(9 << 20)
	for _, tc := range fileCases {
		t.Run(tc.name, func(t *testing.T) {
			// A pace that cuts no one while the test runs: the turns alone must leave room.
			patient := sendPace{base: time.Hour, grace: time.Hour, rate: minSendRate}
			s, addr := startFileServer(t, &fakeFiles{files: map[string][]byte{file: data}}, tc.cacheBytes, patient)
			// Four addresses, each holding all the turns it may: 64.
			const addresses, stalled = 4, 4 * maxTransfersPerClient
			for i := range stalled {
				stalledGet(t, addr, fmt.Sprintf("127.0.0.%d", 2+i%addresses), "/files/"+file)
			}
			awaitTurns(t, s, stalled, 30*time.Second)
			getWhole(t, clientFrom("127.0.0.9"), addr, file, len(data), 0)
			tc.check(t, s, file)
		})
	}
}

// slowReader reads r at rate bytes a second, as a client on a slow link: after each read it
// waits until the bytes read so far have taken their time at that rate.
type slowReader struct {
	r     io.Reader
	rate  int64
	start time.Time
	n     int64
}

func (s *slowReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p[:min(len(p), 8<<10)])
	s.n += int64(n)
	time.Sleep(time.Until(s.start.Add(time.Duration(s.n) * time.Second / time.Duration(s.rate))))
	return n, err
}

// memFileBytes returns the bytes of the memory files of the process named by names, each counted
// once however many descriptors it has.
func memFileBytes(tb testing.TB, names map[string]bool) int64 {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	seen := make(map[uint64]bool)
	var total int64
	for _, fd := range fds {
		path := "/proc/self/fd/" + fd.Name()
		link, err := os.Readlink(path)
		name, ok := strings.CutPrefix(link, "/memfd:")
		if err != nil || !ok || !names[strings.TrimSuffix(name, " (deleted)")] {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue // closed since it was listed
		}
		if ino := fi.Sys().(*syscall.Stat_t).Ino; !seen[ino] {
			seen[ino] = true
			total += fi.Size()
		}
	}
	return total
}

// TestFilesBeingSentHoldAtMostTheCacheSize asks for more distinct cached files than the cache
// holds, each by a client that never reads: the files evicted while they are sent stay in
// memory, and the server sends the files past the bound from the store, so that the memory
// files add up to at most twice the cache.
func TestFilesBeingSentHoldAtMostTheCacheSize(t *testing.T) {
	const cacheBytes, size, files = 48 << 20, 6 << 20, 24 // eight files fill the cache
	src := &fakeFiles{files: map[string][]byte{}}
	names := make(map[string]bool)
	for range files {
		data, name := storedFile(size)
		src.files[name] = data
		names[name] = true
	}
	last, lastName := storedFile(size) // asked for once the bound is reached
	src.files[lastName] = last
	patient := sendPace{base: time.Hour, grace: time.Hour, rate: minSendRate}
	s, addr := startFileServer(t, src, cacheBytes, patient)
	i := 0
	for name := range names {
		stalledGet(t, addr, fmt.Sprintf("127.0.0.%d", 2+i%2), "/files/"+name)
		i++
	}
	awaitTurns(t, s, files, 30*time.Second)
	if got, bound := memFileBytes(t, names), int64(2*cacheBytes); got > bound {
		t.Errorf("memory files of %d MiB while %d files are sent, want at most %d MiB", got>>20, files, bound>>20)
	}
	getWhole(t, clientFrom("127.0.0.9"), addr, lastName, size, 0)
}

// TestMemoryFilesPastTheirDescriptors: past the descriptors the files may hold, a memory file is
// read through the cache's own descriptor, which stays open while its request holds the file,
// evicted or not; and the cache keeps files in the process's memory rather than open more.
func TestMemoryFilesPastTheirDescriptors(t *testing.T) {
	const size = 2 * minMemFile
	src := &fakeFiles{files: map[string][]byte{}}
	for _, c := range []byte("abc") {
		src.files[name(c)] = bytes.Repeat([]byte{c}, size)
	}
	f := newFiles(src, 64*size, time.Now)
	f.limitDescriptors(2) // one memory file cached, one sent with a descriptor of its own
	open := func(c byte) (*cachedFile, func()) {
		t.Helper()
		e, done, err := f.open(t.Context(), name(c), true)
		if err != nil {
			t.Fatal(err)
		}
		return e, done
	}
	a, doneA := open('a')
	b, doneB := open('b')
	if a.mem == nil || b.mem != nil || b.data == nil {
		t.Fatalf("with one memory file allowed: a in one %v, b in one %v, want a only, b in memory", a.mem != nil, b.mem != nil)
	}
	doneB()
	first, closeFirst, err := a.content(t.Context(), f.memSends)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.(*os.File); !ok {
		t.Errorf("first send: got a %T, want a descriptor of its own", first)
	}
	second, closeSecond, err := a.content(t.Context(), f.memSends)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := second.(*os.File); ok {
		t.Error("second send at once: got a descriptor of its own, want the cache's read at offsets")
	}
	f.cache.remove(name('a')) // evicted while it is sent
	got, _ := io.ReadAll(second)
	if !bytes.Equal(got, src.files[name('a')]) {
		t.Errorf("second send read %d bytes, want the %d of a", len(got), size)
	}
	closeSecond()
	closeFirst()
	doneA()
	if _, err := a.mem.f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("memory file of an evicted file once sent: %v, want closed", err)
	}
	if len(f.memSends) != 0 {
		t.Errorf("sends with a descriptor of their own after all ended: %d, want 0", len(f.memSends))
	}
}
