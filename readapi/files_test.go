package readapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// fakeFiles is a FileSource in memory that counts the readers it opens.
type fakeFiles struct {
	mu      sync.Mutex
	files   map[string][]byte
	readers int
	opens   int
	down    bool // Open fails as a store that does not answer
}

func (f *fakeFiles) Open(_ context.Context, name string) (StoredFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if f.down {
		return StoredFile{}, errors.New("store unavailable")
	}
	data, ok := f.files[name]
	if !ok {
		return StoredFile{}, ErrNoFile
	}
	return StoredFile{ContentType: "application/pdf", Size: int64(len(data)), Reader: func(_ context.Context, skip int64) io.Reader {
		f.mu.Lock()
		f.readers++
		f.mu.Unlock()
		return bytes.NewReader(data[skip:])
	}}, nil
}

func name(c byte) string { return "sha256-" + string(bytes.Repeat([]byte{c}, 64)) }

func TestFileCacheHoldsItsBound(t *testing.T) {
	src := &fakeFiles{files: map[string][]byte{}}
	for _, c := range []byte("abcdefghi") {
		src.files[name(c)] = bytes.Repeat([]byte{c}, 900)
	}
	src.files[name('z')] = make([]byte, 1001) // more than an eighth of the cache
	f := newFiles(src, 8000, time.Now)
	for _, c := range []byte("abcdefghiz") {
		e, done, err := f.open(t.Context(), name(c), true)
		if err != nil || e.meta.Size == 0 {
			t.Fatalf("open %c: %v", c, err)
		}
		done()
		if got := f.cache.bytes(); got > 8000 {
			t.Fatalf("cache holds %d bytes, bound 8000", got)
		}
	}
	if f.cache.has(name('z')) {
		t.Error("a file over an eighth of the cache was cached")
	}
	if f.cache.has(name('a')) {
		t.Error("the least recently served file is still cached after eight more")
	}
	// A description alone (a HEAD, a range, a 304) caches nothing.
	src.files[name('y')] = []byte("y")
	if e, _, err := f.open(t.Context(), name('y'), false); err != nil || e.cached() {
		t.Errorf("open without load: %+v, %v; want no bytes", e, err)
	}
	if f.cache.has(name('y')) {
		t.Error("a file opened without loading was cached")
	}
}

func TestCachedFileGoneFromTheSourceStopsBeingServed(t *testing.T) {
	src := &fakeFiles{files: map[string][]byte{name('a'): []byte("pdf")}}
	now := time.Unix(0, 0)
	f := newFiles(src, 1<<20, func() time.Time { return now })
	read := func() (string, error) {
		t.Helper()
		e, done, err := f.open(t.Context(), name('a'), true)
		if err != nil {
			return "", err
		}
		content, closeContent, err := e.content(t.Context(), f.memSends)
		done()
		if err != nil {
			t.Fatal(err)
		}
		defer closeContent()
		b, err := io.ReadAll(content)
		return string(b), err
	}
	if got, err := read(); err != nil || got != "pdf" {
		t.Fatalf("first read: %q, %v", got, err)
	}
	// A minute on, the store is asked once, and not again for another minute; when it does not
	// answer, the cached bytes are served.
	now = now.Add(recheckAfter)
	src.down = true
	if got, err := read(); err != nil || got != "pdf" {
		t.Fatalf("recheck with the store down: %q, %v; want the cached bytes", got, err)
	}
	src.down = false
	opens := src.opens
	for range 3 {
		read()
	}
	if src.opens != opens+1 {
		t.Errorf("%d descriptions asked for three reads after a failed recheck, want 1", src.opens-opens)
	}
	delete(src.files, name('a'))
	if got, err := read(); err != nil || got != "pdf" {
		t.Fatalf("within a minute: %q, %v; want the cached bytes", got, err)
	}
	now = now.Add(recheckAfter)
	if _, err := read(); !errors.Is(err, ErrNoFile) {
		t.Errorf("a minute later: %v, want ErrNoFile", err)
	}
	if f.cache.has(name('a')) {
		t.Error("a file the source no longer holds is still cached")
	}
}

func TestStreamedFileSeeksForwardWithoutStartingAgain(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	src := &fakeFiles{files: map[string][]byte{name('a'): data}}
	meta, _ := src.Open(t.Context(), name('a'))
	s := &streamedFile{ctx: t.Context(), meta: meta}
	if size, _ := s.Seek(0, io.SeekEnd); size != 20 {
		t.Fatalf("size %d", size)
	}
	read := func(at int64, n int) string {
		t.Helper()
		if _, err := s.Seek(at, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(s, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(2, 3) + read(10, 2) + read(15, 5); got != "234abfghij" {
		t.Errorf("read %q", got)
	}
	if src.readers != 1 {
		t.Errorf("%d readers for forward seeks, want 1", src.readers)
	}
	if got := read(0, 2); got != "01" || src.readers != 2 {
		t.Errorf("backward seek: read %q with %d readers, want a new reader", got, src.readers)
	}
}

func TestTransfersPerClient(t *testing.T) {
	tr := &transfers{perClient: map[clientKey]int{}}
	var a, b clientKey
	b[0] = 1
	var releases []func()
	for range maxTransfersPerClient {
		release, ok := tr.take(t.Context(), a)
		if !ok {
			t.Fatal("a client's first turns refused")
		}
		releases = append(releases, release)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, ok := tr.take(gone, a); ok {
		t.Error("a client got more turns than its share")
	}
	if release, ok := tr.take(gone, b); !ok {
		t.Error("another client waited for the first one's turns")
	} else {
		release()
	}
	releases[0]()
	if release, ok := tr.take(gone, a); !ok {
		t.Error("a turn given back was not given again")
	} else {
		release()
	}
	for _, r := range releases[1:] {
		r()
	}
	if len(tr.perClient) != 0 || tr.active != 0 {
		t.Errorf("after every turn ended: %d clients, %d active", len(tr.perClient), tr.active)
	}
}

func TestPinsCountEachFileOnce(t *testing.T) {
	p := &pins{max: 10, senders: map[string]int{}}
	take := func(name string, size int64, want bool) func() {
		t.Helper()
		unpin, ok := p.take(name, size)
		if ok != want {
			t.Fatalf("take %s of %d bytes with %d pinned: %v, want %v", name, size, p.bytes, ok, want)
		}
		return unpin
	}
	a1, a2 := take("a", 6, true), take("a", 6, true) // the same file twice: 6 bytes
	b := take("b", 4, true)
	take("c", 1, false)
	a1()
	take("c", 1, false) // a is still sent
	a2()
	c := take("c", 1, true)
	b()
	c()
	if p.bytes != 0 || len(p.senders) != 0 {
		t.Errorf("after every send ended: %d bytes, %d files, want none", p.bytes, len(p.senders))
	}
}

func TestEvictedFileStaysReadableForItsUsers(t *testing.T) {
	const small, large = minMemFile, 2 * minMemFile // held in memory files
	src := &fakeFiles{files: map[string][]byte{name('a'): bytes.Repeat([]byte{'a'}, small)}}
	f := newFiles(src, 8*large, time.Now)
	open := func(c byte) (*cachedFile, func()) {
		t.Helper()
		e, done, err := f.open(t.Context(), name(c), true)
		if err != nil {
			t.Fatal(err)
		}
		return e, done
	}
	a, doneA := open('a') // a request holds a, about to open its bytes
	if a.mem == nil && runtime.GOOS == "linux" {
		t.Fatal("a file of 64 KiB is not in a memory file")
	}
	for _, c := range []byte("bcdefghijk") {
		src.files[name(c)] = bytes.Repeat([]byte{c}, large)
		_, done := open(c)
		done()
	}
	if f.cache.has(name('a')) {
		t.Fatal("a is still cached; the test wants it evicted")
	}
	content, closeContent, err := a.content(t.Context(), f.memSends)
	doneA()
	if err != nil {
		t.Fatalf("content of an evicted file its request still held: %v", err)
	}
	got, _ := io.ReadAll(content)
	closeContent()
	if !bytes.Equal(got, bytes.Repeat([]byte{'a'}, small)) {
		t.Errorf("evicted file read %d bytes, want %d of a", len(got), small)
	}
	if a.mem != nil {
		if _, err := a.mem.f.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("memory file of an evicted file without users: %v, want closed", err)
		}
	}
	if got := f.cache.bytes(); got > 8*large {
		t.Errorf("cache holds %d bytes, bound %d", got, 8*large)
	}
}
