package readapi

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sync/singleflight"
)

// ErrNoFile is what a FileSource answers for a name it does not hold.
var ErrNoFile = errors.New("no such file")

// errNoMemFile means the system offers no memory files: cached files are held in byte slices.
var errNoMemFile = errors.New("no memory files on this system")

// FileSource is where the read API finds the uploaded files it serves under /files/.
type FileSource interface {
	// Open describes the file name, or answers an error matching ErrNoFile.
	Open(ctx context.Context, name string) (StoredFile, error)
}

// StoredFile is one file of a FileSource.
type StoredFile struct {
	ContentType string
	Size        int64
	// Reader reads the file's bytes from offset skip on, fetching them as it is read.
	Reader func(ctx context.Context, skip int64) io.Reader
}

// DefaultFileCacheBytes is the memory the cache of files holds at most unless configured.
const DefaultFileCacheBytes = 64 << 20

// Bounds of serving files.
const (
	// maxTransfers is how many large or streamed files are sent at once; maxTransfersPerClient
	// of them to one client address. A sender waits for its turn up to transferWait, then is
	// answered 503: a slow reader holds a turn, not unbounded memory, and one that stops is cut
	// within seconds (sendpace.go). The turns are sixteen times what one address may hold, so
	// that a few addresses cannot take them all. A streamed file holds two chunks of the store
	// (256 KiB) and a copy buffer (32 KiB) while it is sent: 72 MiB when every turn streams.
	maxTransfers          = 256
	maxTransfersPerClient = 16
	transferWait          = 2 * time.Second
	// largeFile is the size from which a file sent from the cache also takes a turn: while it is
	// sent, an evicted file stays in memory.
	largeFile = 1 << 20
	// maxLoads is how many files are read from the source into the cache at once.
	maxLoads = 4
	// maxRanges is how many ranges of a cached file one request may ask for; a streamed file
	// serves one. A request asking for more gets the whole file, as RFC 9110 allows.
	maxRanges = 16
	// minMemFile is the smallest file cached in a memory file, sent with sendfile: below it, the
	// copy sendfile saves is small beside the descriptor and the page it costs.
	minMemFile = 64 << 10
	// DefaultFileDescriptors is how many descriptors the files served hold at most unless
	// configured: memory files in the cache (past them, files are cached in the process's
	// memory), and one more for each memory file being sent with sendfile (past them, a memory
	// file is copied through the process, from the cache's own descriptor).
	DefaultFileDescriptors = 2048 + 256
	memPage                = 4096
	// recheckAfter is how long a cached file is served before the source is asked again whether
	// it still holds it: a file removed from the store stops being served within that time.
	recheckAfter = time.Minute
)

// fileCacheHeader says that a stored file never changes: its name is the digest of its bytes.
var fileCacheHeader = []string{"public, max-age=31536000, immutable"}

// files serves stored files: small and recently asked ones from a cache of bounded memory,
// the others streamed from the source without holding them whole.
type files struct {
	source    FileSource
	cache     *fileCache
	memSends  chan struct{}      // a token per memory file being sent with a descriptor of its own
	inflight  singleflight.Group // one description or load from the source per file at once
	loads     chan struct{}      // a token per file being read into the cache
	transfers *transfers
	pins      *pins
	pace      sendPace // how fast a client must take a file
	now       func() time.Time
}

func newFiles(source FileSource, cacheBytes int64, now func() time.Time) *files {
	cacheBytes = max(cacheBytes, 0)
	return &files{
		source: source, cache: newFileCache(cacheBytes), loads: make(chan struct{}, maxLoads),
		memSends:  make(chan struct{}, DefaultFileDescriptors-DefaultFileDescriptors*8/9),
		transfers: &transfers{perClient: make(map[clientKey]int)},
		pins:      &pins{max: cacheBytes, senders: make(map[string]int)},
		pace:      defaultPace, now: now,
	}
}

// validFileName says whether name can name a stored file: "sha256-" and 64 lowercase
// hexadecimal digits. Any other name is answered 404 without asking the source.
func validFileName(name string) bool {
	hex, ok := strings.CutPrefix(name, "sha256-")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// serveFile serves GET and HEAD /files/<name>: the file's bytes with its type, its name as a
// strong ETag, a year of caching, ranges, and 304 on If-None-Match. An unknown file is a 404
// that counts against the per-address quota of the redirects, as the redirects do, so that
// guessing names is as limited as guessing slugs. A name sent with escapes (%73ha256-...) is
// unknown: a file has one path, which shared caches see as one.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	if s.files == nil || r.URL.RawPath != "" || !validFileName(name) {
		s.fileNotFound(w, r)
		return
	}
	if !s.files.cache.has(name) && s.redirectsExhausted(r) {
		// A client out of its quota of unknown names asks the source nothing more until it has
		// quota again; a cached file, which costs nothing, is still served.
		s.admitRedirect(w, r)
		return
	}
	etag := `"` + name + `"`
	// Only a GET that will carry the whole body fills the cache: a HEAD, a 304 or a range
	// costs a description of the file, and the bytes it sends.
	sendsBody := r.Method == http.MethodGet && !noneMatch(r, etag)
	whole := sendsBody && r.Header.Get("Range") == ""
	f, done, err := s.files.open(r.Context(), name, whole)
	switch {
	case errors.Is(err, ErrNoFile):
		s.fileNotFound(w, r)
		return
	case err != nil:
		if r.Context().Err() == nil {
			s.logger.Warn("file not served", "file", name, "err", err)
		}
		writeError(w, r, unavailable)
		return
	}
	if sendsBody && (!f.cached() || f.meta.Size >= largeFile) {
		release, ok := s.files.transfers.take(r.Context(), ipKey(s.clientIP(r)))
		if !ok {
			done()
			writeError(w, r, unavailable)
			return
		}
		defer release()
		if f.cached() {
			unpin, ok := s.files.pins.take(name, f.size())
			if !ok {
				// Past the memory the cached files being sent may hold: streamed from the store.
				done()
				f, done, unpin = &cachedFile{name: name, meta: f.meta}, func() {}, func() {}
			}
			defer unpin()
		}
	}
	content, closeContent, err := f.content(r.Context(), s.files.memSends)
	defer done() // the file stays in use while it is sent
	if err != nil {
		s.logger.Warn("file not served", "file", name, "err", err)
		writeError(w, r, unavailable)
		return
	}
	defer closeContent()
	if ranges := strings.Count(r.Header.Get("Range"), ",") + 1; !f.cached() && ranges > 1 || ranges > maxRanges {
		r.Header.Del("Range")
	}
	h := w.Header()
	h["Content-Type"] = []string{f.meta.ContentType}
	h["Etag"] = []string{etag}
	h["Cache-Control"] = fileCacheHeader
	h["X-Content-Type-Options"] = nosniff
	http.ServeContent(s.files.pace.writer(w, f.meta.Size), r, "", time.Time{}, content)
}

var nosniff = []string{"nosniff"}

// noneMatch says whether If-None-Match names etag, or any file ("*").
func noneMatch(r *http.Request, etag string) bool {
	v := r.Header.Get("If-None-Match")
	return v != "" && (strings.Contains(v, etag) || strings.TrimSpace(v) == "*")
}

// redirectsExhausted says whether the client of r has no redirect quota left.
func (s *Server) redirectsExhausted(r *http.Request) bool {
	p := s.redirectQuota
	return p != nil && p.lim.peek(ipKey(s.clientIP(r)), s.elapsed()).remaining == 0
}

func (s *Server) fileNotFound(w http.ResponseWriter, r *http.Request) {
	if s.admitRedirect(w, r) {
		writeError(w, r, notFound)
	}
}

// open returns the file name: from the cache, else its description, with its bytes read into
// the cache when load is true and the cache takes it. The caller calls done once it has the
// file's content open.
func (f *files) open(ctx context.Context, name string, load bool) (e *cachedFile, done func(), err error) {
	if e, checked, ok := f.cache.get(name); ok {
		done := func() { f.cache.release(e) }
		if f.now().Sub(checked) < recheckAfter {
			return e, done, nil
		}
		switch _, err := f.describe(ctx, name); {
		case errors.Is(err, ErrNoFile):
			done()
			f.cache.remove(name)
			return nil, nil, err
		case err == nil:
			f.cache.setChecked(e, f.now())
		}
		// The store did not answer: the bytes in hand are served, and it is asked again next time.
		return e, done, nil
	}
	meta, err := f.describe(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if !load || !f.cache.admits(meta.Size) {
		return &cachedFile{name: name, meta: meta}, func() {}, nil
	}
	loaded := f.inflight.DoChan("load "+name, func() (any, error) {
		// Not the request's context: the load serves every request waiting on it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		select {
		case f.loads <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-f.loads }()
		e, err := loadFile(ctx, name, meta, f.cache.roomForMemFile())
		if err != nil {
			return nil, err
		}
		e.checked = f.now()
		f.cache.add(e)
		return nil, nil
	})
	select {
	case res := <-loaded:
		if res.Err != nil {
			// Sent from the store as any file past the cache; loaded again at a next request.
			return &cachedFile{name: name, meta: meta}, func() {}, nil
		}
	case <-ctx.Done():
		return nil, nil, ctx.Err() // the load goes on for the others
	}
	if e, _, ok := f.cache.get(name); ok {
		return e, func() { f.cache.release(e) }, nil
	}
	// Evicted already by other loads: sent from the store, as any file past the cache.
	return &cachedFile{name: name, meta: meta}, func() {}, nil
}

// loadFile reads the file meta describes whole, checking that its size is the one described:
// into a memory file when it is large enough for sendfile to pay and memory files is true, else
// into memory of the process.
func loadFile(ctx context.Context, name string, meta StoredFile, memFiles bool) (*cachedFile, error) {
	if memFiles && meta.Size >= minMemFile {
		r := io.LimitReader(meta.Reader(ctx, 0), meta.Size+1)
		if mem, err := newMemFile(name, r, meta.Size); err == nil {
			return &cachedFile{name: name, meta: meta, mem: mem}, nil
		} else if !errors.Is(err, errNoMemFile) {
			return nil, err
		}
	}
	data := make([]byte, meta.Size+1)
	n, err := io.ReadFull(meta.Reader(ctx, 0), data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	if int64(n) != meta.Size {
		return nil, fmt.Errorf("file %s has %d bytes or more, its description says %d", name, n, meta.Size)
	}
	return &cachedFile{name: name, meta: meta, data: data[:n]}, nil
}

// describe asks the source for the description of file name, once for all who ask at once.
func (f *files) describe(ctx context.Context, name string) (StoredFile, error) {
	described := f.inflight.DoChan("describe "+name, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return f.source.Open(ctx, name)
	})
	select {
	case res := <-described:
		if res.Err != nil {
			return StoredFile{}, res.Err
		}
		return res.Val.(StoredFile), nil
	case <-ctx.Done():
		return StoredFile{}, ctx.Err()
	}
}

// transfers hands out the turns to send large or streamed files.
type transfers struct {
	mu        sync.Mutex
	active    int
	perClient map[clientKey]int // clients with a turn; emptied as turns end
}

// take waits for a turn of client until ctx ends or transferWait passes; release gives it back.
func (t *transfers) take(ctx context.Context, client clientKey) (release func(), ok bool) {
	deadline := time.NewTimer(transferWait)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		if t.active < maxTransfers && t.perClient[client] < maxTransfersPerClient {
			t.active++
			t.perClient[client]++
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				defer t.mu.Unlock()
				t.active--
				if t.perClient[client]--; t.perClient[client] == 0 {
					delete(t.perClient, client)
				}
			}, true
		}
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false
		case <-deadline.C:
			return nil, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pins bounds the memory of the cached files being sent with a turn. A file evicted from the
// cache while it is sent stays in memory until its last request is done: without a bound, each
// turn could hold another evicted file, maxTransfers times the largest file the cache keeps
// (2 GiB with the default cache). With it, the files in memory, cached or being sent, take at
// most twice the cache's size; a large cached file asked for past the bound is streamed from
// the source. A file counts once however many requests send it.
type pins struct {
	mu      sync.Mutex
	max     int64
	bytes   int64          // of the files in senders
	senders map[string]int // requests sending each file; emptied as they end
}

// take counts a request sending file name of size bytes, unless the file is not being sent yet
// and would take the bytes past the bound; unpin ends the count.
func (p *pins) take(name string, size int64) (unpin func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.senders[name] == 0 {
		if p.bytes+size > p.max {
			return nil, false
		}
		p.bytes += size
	}
	p.senders[name]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.senders[name]--; p.senders[name] == 0 {
			delete(p.senders, name)
			p.bytes -= size
		}
	}, true
}

// streamedFile is an io.ReadSeeker over a file of the source, for http.ServeContent: a seek
// only moves the offset; the next read fetches from there, or goes on reading forward.
type streamedFile struct {
	ctx    context.Context
	meta   StoredFile
	offset int64     // of the next byte read
	r      io.Reader // reads from at, or nil
	at     int64     // offset of the next byte r gives
}

func (f *streamedFile) Read(p []byte) (int, error) {
	if f.r == nil || f.at > f.offset {
		f.r, f.at = f.meta.Reader(f.ctx, f.offset), f.offset
	}
	if f.at < f.offset {
		n, err := io.CopyN(io.Discard, f.r, f.offset-f.at)
		if f.at += n; err != nil {
			return 0, err
		}
	}
	n, err := f.r.Read(p)
	f.offset += int64(n)
	f.at += int64(n)
	return n, err
}

func (f *streamedFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.offset
	case io.SeekEnd:
		offset += f.meta.Size
	}
	if offset < 0 {
		return 0, errors.New("seek before the start of the file")
	}
	f.offset = offset
	return offset, nil
}

// cachedFile is one file of the cache, or the description of one that is not.
type cachedFile struct {
	name string
	meta StoredFile
	// The bytes of a cached file: in a memory file where the system has them, which net/http
	// sends with sendfile(2), else in data. Neither, for a file that is not cached.
	mem  *memFile
	data []byte

	// Under the cache's lock:
	checked time.Time // when the source last said it holds the file
	elem    *list.Element
	users   int  // requests about to open mem
	evicted bool // out of the cache: mem closes when its last user is done
}

func (e *cachedFile) cached() bool { return e.mem != nil || e.data != nil }

// size is the memory e holds: a memory file takes whole pages.
func (e *cachedFile) size() int64 {
	switch {
	case e.mem != nil:
		return (e.meta.Size + memPage - 1) / memPage * memPage
	case e.data != nil:
		return e.meta.Size
	}
	return 0
}

// content returns a reader of e's bytes for http.ServeContent, and what to call once it is sent.
// A memory file is opened anew, for the kernel to send it with sendfile, while sends has room;
// past it, it is read through the cache's own descriptor (the caller then keeps e in use until it
// is sent, so that the descriptor stays open).
func (e *cachedFile) content(ctx context.Context, sends chan struct{}) (io.ReadSeeker, func(), error) {
	switch {
	case e.mem != nil:
		select {
		case sends <- struct{}{}:
		default:
			return e.mem.reader(e.meta.Size), func() {}, nil
		}
		f, err := e.mem.open()
		if err != nil {
			<-sends
			return nil, nil, err
		}
		return f, func() { f.Close(); <-sends }, nil
	case e.data != nil:
		return bytes.NewReader(e.data), func() {}, nil
	}
	return &streamedFile{ctx: ctx, meta: e.meta}, func() {}, nil
}

// fileCache keeps the most recently served files up to a total size, least recently served
// first out. A file larger than an eighth of the total is never kept, so that one large file
// cannot push every other out.
type fileCache struct {
	mu          sync.Mutex
	capacity    int64
	size        int64
	memFiles    int // entries held in memory files, each a descriptor of the process
	maxMemFiles int // past which files are cached in the process's memory
	byName      map[string]*cachedFile
	order       *list.List // front: most recently served
}

// roomForMemFile says whether one more file may be held in a memory file.
func (c *fileCache) roomForMemFile() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memFiles < c.maxMemFiles
}

func newFileCache(capacity int64) *fileCache {
	return &fileCache{capacity: capacity, maxMemFiles: DefaultFileDescriptors * 8 / 9, byName: make(map[string]*cachedFile), order: list.New()}
}

func (c *fileCache) admits(size int64) bool { return size <= c.capacity/8 }

// get returns the cached file name, with when it was last checked, and counts the caller as one
// of its users until it calls release.
func (c *fileCache) get(name string) (e *cachedFile, checked time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok = c.byName[name]; !ok {
		return nil, time.Time{}, false
	}
	c.order.MoveToFront(e.elem)
	e.users++
	return e, e.checked, true
}

// release ends a use of e that get began.
func (c *fileCache) release(e *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.users--; e.users == 0 && e.evicted {
		e.close()
	}
}

func (c *fileCache) add(e *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byName[e.name]; ok {
		e.close()
		return
	}
	for c.size+e.size() > c.capacity && c.order.Len() > 0 {
		c.evict(c.order.Back().Value.(*cachedFile))
	}
	e.elem = c.order.PushFront(e)
	c.byName[e.name] = e
	c.size += e.size()
	if e.mem != nil {
		c.memFiles++
	}
}

func (c *fileCache) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byName[name]; ok {
		c.evict(e)
	}
}

// evict takes e out of the cache; its memory file closes once no request is about to open it,
// since its descriptor's number, once closed, may name any other file of the process.
func (c *fileCache) evict(e *cachedFile) {
	c.order.Remove(e.elem)
	delete(c.byName, e.name)
	c.size -= e.size()
	if e.mem != nil {
		c.memFiles--
	}
	e.evicted = true
	if e.users == 0 {
		e.close()
	}
}

func (e *cachedFile) close() {
	if e.mem != nil {
		e.mem.close()
	}
}

func (c *fileCache) setChecked(e *cachedFile, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.checked = at
}

// has says whether file name is cached.
func (c *fileCache) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byName[name]
	return ok
}

// bytes returns the memory the cached files hold.
func (c *fileCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// limitDescriptors shares n descriptors between the memory files the cache holds (eight ninths)
// and those being sent with a descriptor of their own.
func (f *files) limitDescriptors(n int) {
	n = max(n, 2)
	f.cache.maxMemFiles = n * 8 / 9
	f.memSends = make(chan struct{}, max(n-f.cache.maxMemFiles, 1))
}
