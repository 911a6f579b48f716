package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// FilesBucketName is the JetStream object store of uploaded menu files.
const FilesBucketName = "FILES"

// ErrFileNotFound means no file of that name is stored.
var ErrFileNotFound = errors.New("file not found")

// Reading a file fetches this many bytes of its chunks per request at most.
const fileReadBatchBytes = 1 << 20

// FileInfo describes one stored file.
type FileInfo struct {
	Name        string
	ContentType string
	Size        int64
	Modified    time.Time // when it was stored or last touched
	// Digest is the store's own checksum of the bytes, "SHA-256=<base64url>".
	Digest string
	nuid   string
	chunks uint32
}

// Files stores uploaded files by name in a JetStream object store, replicated like the event
// log. Its reads fetch a file's chunks with batched direct gets: they create no consumer, so
// serving a file costs requests, not server state. It is safe for concurrent use.
type Files struct {
	js     jetstream.JetStream
	store  jetstream.ObjectStore
	stream string
}

// OpenFiles creates the object store FilesBucketName, or updates it to this configuration: file
// storage, replicas copies (at least 1), no compression (images and PDFs are compressed already).
func OpenFiles(ctx context.Context, js jetstream.JetStream, replicas int) (*Files, error) {
	store, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      FilesBucketName,
		Description: "Uploaded menu files, named by the SHA-256 of their content.",
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", FilesBucketName, err)
	}
	return &Files{js: js, store: store, stream: "OBJ_" + FilesBucketName}, nil
}

func infoOf(oi *jetstream.ObjectInfo) FileInfo {
	fi := FileInfo{Name: oi.Name, Size: int64(oi.Size), Modified: oi.ModTime, Digest: oi.Digest, nuid: oi.NUID, chunks: oi.Chunks}
	if oi.Headers != nil {
		fi.ContentType = nats.Header(oi.Headers).Get("Content-Type")
	}
	return fi
}

// Stat returns the description of file name, or an error matching ErrFileNotFound.
func (f *Files) Stat(ctx context.Context, name string) (FileInfo, error) {
	oi, err := f.store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return FileInfo{}, fmt.Errorf("%s: %w", name, ErrFileNotFound)
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("describe file %s: %w", name, err)
	}
	return infoOf(oi), nil
}

// PutNew stores data as file name of type contentType unless a file of that name exists, in which
// case it is left as it is: names are digests of their content, so the same name holds the same
// bytes. created says whether data was stored.
func (f *Files) PutNew(ctx context.Context, name, contentType string, data []byte) (fi FileInfo, created bool, err error) {
	if fi, err := f.Stat(ctx, name); err == nil {
		return fi, false, nil
	} else if !errors.Is(err, ErrFileNotFound) {
		return FileInfo{}, false, err
	}
	oi, err := f.store.Put(ctx, jetstream.ObjectMeta{
		Name:    name,
		Headers: nats.Header{"Content-Type": []string{contentType}},
	}, bytes.NewReader(data))
	if err != nil {
		return FileInfo{}, false, fmt.Errorf("store file %s: %w", name, err)
	}
	return infoOf(oi), true, nil
}

// Touch sets the modification time of file name to now, leaving its bytes as they are.
func (f *Files) Touch(ctx context.Context, name string) error {
	oi, err := f.store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("%s: %w", name, ErrFileNotFound)
	}
	if err != nil {
		return fmt.Errorf("describe file %s: %w", name, err)
	}
	if err := f.store.UpdateMeta(ctx, name, oi.ObjectMeta); err != nil {
		return fmt.Errorf("touch file %s: %w", name, err)
	}
	return nil
}

// List returns every stored file.
func (f *Files) List(ctx context.Context) ([]FileInfo, error) {
	ois, err := f.store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	out := make([]FileInfo, 0, len(ois))
	for _, oi := range ois {
		out = append(out, infoOf(oi))
	}
	return out, nil
}

// Delete removes file name and its bytes; removing a missing file is not an error.
func (f *Files) Delete(ctx context.Context, name string) error {
	if err := f.store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete file %s: %w", name, err)
	}
	return nil
}

// Reader returns a reader of the bytes of the file fi describes, from byte skip on. It fetches
// the file's chunks as it is read, about a megabyte at a time, and fails if they do not add up to
// the file's size.
func (f *Files) Reader(ctx context.Context, fi FileInfo, skip int64) io.Reader {
	return &fileReader{ctx: ctx, f: f, fi: fi, skip: skip, subject: "$O." + FilesBucketName + ".C." + fi.nuid, from: 1}
}

type fileReader struct {
	ctx     context.Context
	f       *Files
	fi      FileInfo
	subject string
	skip    int64    // bytes still to skip
	from    uint64   // stream sequence to fetch the next chunks from
	chunks  uint32   // chunks fetched
	read    int64    // bytes fetched
	pending [][]byte // chunks fetched, not yet read
	cur     []byte   // the rest of the chunk being read
	err     error
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		switch {
		case r.err != nil:
			return 0, r.err
		case len(r.pending) > 0:
			r.cur, r.pending = r.pending[0], r.pending[1:]
			n := min(r.skip, int64(len(r.cur)))
			r.cur, r.skip = r.cur[n:], r.skip-n
		case r.chunks == r.fi.chunks:
			if r.read != r.fi.Size {
				r.err = fmt.Errorf("read file %s: %d bytes, its description says %d", r.fi.Name, r.read, r.fi.Size)
			} else {
				r.err = io.EOF
			}
		default:
			r.err = r.fetch()
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// fetch reads the next chunks with one batched direct get.
func (r *fileReader) fetch() error {
	msgs, err := jetstreamext.GetBatch(r.ctx, r.f.js, r.f.stream, int(r.fi.chunks-r.chunks), jetstreamext.GetBatchSeq(r.from),
		jetstreamext.GetBatchSubject(r.subject), jetstreamext.GetBatchMaxBytes(fileReadBatchBytes))
	if err != nil {
		return fmt.Errorf("read file %s: %w", r.fi.Name, err)
	}
	got := 0
	for msg, err := range msgs {
		if err != nil {
			return fmt.Errorf("read file %s after %d bytes: %w", r.fi.Name, r.read, err)
		}
		r.pending = append(r.pending, msg.Data)
		r.chunks, r.read, r.from = r.chunks+1, r.read+int64(len(msg.Data)), msg.Sequence+1
		got++
	}
	if got == 0 {
		return fmt.Errorf("read file %s: chunk %d of %d is missing", r.fi.Name, r.chunks+1, r.fi.chunks)
	}
	return nil
}
