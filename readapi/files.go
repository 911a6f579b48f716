package readapi

import (
	"bytes"
	"container/list"
	"context"
	"errors"
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

// fileWriteTimeout bounds the sending of one file, longer than the documents' limit: a file may
// weigh 10 MB.
const fileWriteTimeout = 5 * time.Minute

// fileCacheHeader says that a stored file never changes: its name is the digest of its bytes.
var fileCacheHeader = []string{"public, max-age=31536000, immutable"}

// files serves stored files: small and recently asked ones from a cache of bounded memory,
// the others streamed from the source without holding them whole.
type files struct {
	source   FileSource
	cache    *fileCache
	inflight singleflight.Group // one load from the source per file at once
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
// guessing names is as limited as guessing slugs.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	if s.files == nil || !validFileName(name) {
		s.fileNotFound(w, r)
		return
	}
	content, meta, err := s.files.open(r.Context(), name)
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
	h := w.Header()
	h["Content-Type"] = []string{meta.ContentType}
	h["Etag"] = []string{`"` + name + `"`}
	h["Cache-Control"] = fileCacheHeader
	h["X-Content-Type-Options"] = nosniff
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(fileWriteTimeout))
	http.ServeContent(w, r, "", time.Time{}, content)
}

var nosniff = []string{"nosniff"}

func (s *Server) fileNotFound(w http.ResponseWriter, r *http.Request) {
	if s.admitRedirect(w, r) {
		writeError(w, r, notFound)
	}
}

// open returns a reader of the file name: its bytes from the cache, or a reader that streams
// them from the source as they are asked for.
func (f *files) open(ctx context.Context, name string) (io.ReadSeeker, StoredFile, error) {
	if e, ok := f.cache.get(name); ok {
		return bytes.NewReader(e.data), e.meta, nil
	}
	v, err, _ := f.inflight.Do(name, func() (any, error) {
		// Not the request's context: the load serves every request waiting on it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		meta, err := f.source.Open(ctx, name)
		if err != nil {
			return nil, err
		}
		if !f.cache.admits(meta.Size) {
			return &cachedFile{meta: meta}, nil
		}
		data := make([]byte, 0, meta.Size)
		buf := bytes.NewBuffer(data)
		if _, err := buf.ReadFrom(meta.Reader(ctx, 0)); err != nil {
			return nil, err
		}
		e := &cachedFile{name: name, meta: meta, data: buf.Bytes()}
		f.cache.add(e)
		return e, nil
	})
	if err != nil {
		return nil, StoredFile{}, err
	}
	e := v.(*cachedFile)
	if e.data != nil {
		return bytes.NewReader(e.data), e.meta, nil
	}
	return &streamedFile{ctx: ctx, meta: e.meta}, e.meta, nil
}

// streamedFile is an io.ReadSeeker over a file of the source, for http.ServeContent: a seek
// only moves the offset, and the next read fetches from there.
type streamedFile struct {
	ctx    context.Context
	meta   StoredFile
	offset int64
	r      io.Reader // reads from offset; nil after a seek
}

func (f *streamedFile) Read(p []byte) (int, error) {
	if f.r == nil {
		f.r = f.meta.Reader(f.ctx, f.offset)
	}
	n, err := f.r.Read(p)
	f.offset += int64(n)
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
	if offset != f.offset {
		f.offset, f.r = offset, nil
	}
	return offset, nil
}

// cachedFile is one file of the cache.
type cachedFile struct {
	name string
	meta StoredFile
	data []byte // nil: not cached, too large
	elem *list.Element
}

// fileCache keeps the most recently served files up to a total size, least recently served
// first out. A file larger than an eighth of the total is never kept, so that one large file
// cannot push every other out.
type fileCache struct {
	mu       sync.Mutex
	capacity int64
	size     int64
	byName   map[string]*cachedFile
	order    *list.List // front: most recently served
}

func newFileCache(capacity int64) *fileCache {
	return &fileCache{capacity: capacity, byName: make(map[string]*cachedFile), order: list.New()}
}

func (c *fileCache) admits(size int64) bool { return size <= c.capacity/8 }

func (c *fileCache) get(name string) (*cachedFile, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byName[name]
	if ok {
		c.order.MoveToFront(e.elem)
	}
	return e, ok
}

func (c *fileCache) add(e *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byName[e.name]; ok {
		return
	}
	for c.size+int64(len(e.data)) > c.capacity && c.order.Len() > 0 {
		old := c.order.Remove(c.order.Back()).(*cachedFile)
		delete(c.byName, old.name)
		c.size -= int64(len(old.data))
	}
	e.elem = c.order.PushFront(e)
	c.byName[e.name] = e
	c.size += int64(len(e.data))
}

// bytes returns the memory the cached files hold.
func (c *fileCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
