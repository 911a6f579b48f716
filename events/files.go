package events

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"golang.org/x/sync/singleflight"
)

// FilesBucketName is the JetStream object store of uploaded menu files.
const FilesBucketName = "FILES"

// ErrFileNotFound means no file of that name is stored.
var ErrFileNotFound = errors.New("file not found")

// Reading a file fetches this many bytes of its chunks per request at most: two chunks.
const fileReadBatchBytes = 256 << 10

// filesStream is the stream behind the object store; its subjects are those of the object
// store's protocol: one per file for its description, one per stored copy for its chunks.
const filesStream = "OBJ_" + FilesBucketName

func metaSubject(name string) string {
	return "$O." + FilesBucketName + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

func chunkSubject(nuid string) string { return "$O." + FilesBucketName + ".C." + nuid }

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
	meta   uint64 // stream sequence of its description: a change of it is a change of the file
}

// Files stores uploaded files by name in a JetStream object store, replicated like the event
// log. Its reads fetch a file's chunks with batched direct gets: they create no consumer, so
// serving a file costs requests, not server state. It is safe for concurrent use.
type Files struct {
	js     jetstream.JetStream
	store  jetstream.ObjectStore
	stream jetstream.Stream
	// chunks remembers where the chunks of recently read files are, so that a read from the
	// middle of a file starts at its chunk instead of fetching every chunk before it.
	chunks *lru.Cache[string, []chunkAt]
	// puts makes concurrent stores of the same name one: two would each write the bytes, and
	// the first copy would be left behind, described by nothing.
	puts singleflight.Group
}

// chunkAt is where one chunk of a file is: its stream sequence and the offset of its first byte.
type chunkAt struct {
	seq    uint64
	offset int64
}

// chunkIndexFiles bounds the files whose chunk positions are remembered: about 1.3 kB each for a
// file of 10 MB.
const chunkIndexFiles = 1024

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
	stream, err := js.Stream(ctx, filesStream)
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", FilesBucketName, err)
	}
	chunks, _ := lru.New[string, []chunkAt](chunkIndexFiles)
	return &Files{js: js, store: store, stream: stream, chunks: chunks}, nil
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
	oi, seq, err := f.describe(ctx, name)
	if err != nil {
		return FileInfo{}, err
	}
	fi := infoOf(oi)
	fi.meta = seq
	return fi, nil
}

// describe reads the last description of file name with its stream sequence.
func (f *Files) describe(ctx context.Context, name string) (*jetstream.ObjectInfo, uint64, error) {
	msg, err := f.stream.GetLastMsgForSubject(ctx, metaSubject(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, fmt.Errorf("%s: %w", name, ErrFileNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("describe file %s: %w", name, err)
	}
	var oi jetstream.ObjectInfo
	if err := json.Unmarshal(msg.Data, &oi); err != nil {
		return nil, 0, fmt.Errorf("describe file %s: %w", name, err)
	}
	if oi.Deleted {
		return nil, 0, fmt.Errorf("%s: %w", name, ErrFileNotFound)
	}
	oi.ModTime = msg.Time
	return &oi, msg.Sequence, nil
}

// errDescriptionMoved means a description was written by someone else since it was read.
var errDescriptionMoved = errors.New("description changed meanwhile")

// describeAs writes oi as the description of its file, replacing every earlier one, only if the
// last one is still the one at sequence last.
func (f *Files) describeAs(ctx context.Context, oi *jetstream.ObjectInfo, last uint64) error {
	oi.ModTime = time.Time{} // the time of a description is that of its message
	data, err := json.Marshal(oi)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(metaSubject(oi.Name))
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Data = data
	_, err = f.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
	if hasCode(err, jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return errDescriptionMoved
	}
	return err
}

// PutNew stores data as file name of type contentType unless a file of that name exists, in which
// case it is left as it is: names are digests of their content, so the same name holds the same
// bytes. created says whether data was stored.
func (f *Files) PutNew(ctx context.Context, name, contentType string, data []byte) (fi FileInfo, created bool, err error) {
	type put struct {
		fi      FileInfo
		created bool
	}
	ran := false
	ch := f.puts.DoChan(name, func() (any, error) {
		ran = true
		// Not the first caller's context alone: the store serves every caller waiting on it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if fi, err := f.Stat(ctx, name); err == nil {
			return put{fi, false}, nil
		} else if !errors.Is(err, ErrFileNotFound) {
			return nil, err
		}
		oi, err := f.store.Put(ctx, jetstream.ObjectMeta{
			Name:    name,
			Headers: nats.Header{"Content-Type": []string{contentType}},
		}, bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("store file %s: %w", name, StorageFull(err))
		}
		// The description of the new copy, with the sequence a removal is conditioned on.
		fi, err := f.Stat(ctx, name)
		if err != nil {
			fi = infoOf(oi)
		}
		return put{fi, true}, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return FileInfo{}, false, res.Err
		}
		p := res.Val.(put)
		return p.fi, p.created && ran, nil
	case <-ctx.Done():
		return FileInfo{}, false, ctx.Err()
	}
}

// Touch sets the modification time of file name to now, leaving its bytes as they are. It fails
// with ErrFileNotFound when the file is gone, even if it went a moment ago: a touch never brings
// a removed file's description back.
func (f *Files) Touch(ctx context.Context, name string) error {
	oi, seq, err := f.describe(ctx, name)
	if err != nil {
		return err
	}
	switch err := f.describeAs(ctx, oi, seq); {
	case errors.Is(err, errDescriptionMoved):
		// Touched by another at the same time, which is as good, unless it was removed.
		_, _, err := f.describe(ctx, name)
		return err
	case err != nil:
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

// RemoveUnchanged removes the file fi describes, its bytes included, unless its description
// changed since fi was read (it was touched, or stored again): removed says whether it was.
func (f *Files) RemoveUnchanged(ctx context.Context, fi FileInfo) (removed bool, err error) {
	oi, seq, err := f.describe(ctx, fi.Name)
	if errors.Is(err, ErrFileNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if seq != fi.meta {
		return false, nil
	}
	oi.Deleted = true
	oi.Size, oi.Chunks, oi.Digest = 0, 0, ""
	switch err := f.describeAs(ctx, oi, seq); {
	case errors.Is(err, errDescriptionMoved):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("remove file %s: %w", fi.Name, err)
	}
	if err := f.stream.Purge(ctx, jetstream.WithPurgeSubject(chunkSubject(oi.NUID))); err != nil {
		return true, fmt.Errorf("remove the bytes of file %s: %w", fi.Name, err)
	}
	return true, nil
}

// RemoveOrphans removes the bytes that no description names and that were stored before
// olderThan: copies left behind by a store interrupted before its description was written, or by
// two processes storing the same name at once. Younger ones may be a store in progress. It
// returns how many copies it removed.
func (f *Files) RemoveOrphans(ctx context.Context, olderThan time.Time) (int, error) {
	described := make(map[string]bool)
	ois, err := f.store.List(ctx, jetstream.ListObjectsShowDeleted())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, fmt.Errorf("list files: %w", err)
	}
	for _, oi := range ois {
		if !oi.Deleted && oi.Chunks > 0 {
			described[chunkSubject(oi.NUID)] = true
		}
	}
	// One subject per description, removed ones included, and per described copy of bytes: when
	// the stream has no more, there is no orphan, and its subjects need not be listed.
	total, err := f.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("describe the store of files: %w", err)
	}
	if total.State.NumSubjects <= uint64(len(ois)+len(described)) {
		return 0, nil
	}
	info, err := f.stream.Info(ctx, jetstream.WithSubjectFilter(chunkSubject("*")))
	if err != nil {
		return 0, fmt.Errorf("list the bytes of files: %w", err)
	}
	removed := 0
	for subject := range info.State.Subjects {
		if described[subject] {
			continue
		}
		first, err := jetstreamext.GetBatch(ctx, f.js, filesStream, 1, jetstreamext.GetBatchSeq(1), jetstreamext.GetBatchSubject(subject))
		if err != nil {
			return removed, fmt.Errorf("read the bytes of %s: %w", subject, err)
		}
		young := true
		for msg, err := range first {
			young = err != nil || !msg.Time.Before(olderThan)
		}
		if young {
			continue
		}
		if err := f.stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return removed, fmt.Errorf("remove %s: %w", subject, err)
		}
		removed++
	}
	return removed, nil
}

// Reader returns a reader of the bytes of the file fi describes, from byte skip on. It fetches
// the file's chunks as it is read, two at a time, starting at the chunk that holds byte skip when
// the file was read to its end lately, and fails if the chunks do not add up to the file's size.
func (f *Files) Reader(ctx context.Context, fi FileInfo, skip int64) io.Reader {
	r := &fileReader{ctx: ctx, f: f, fi: fi, skip: skip, subject: chunkSubject(fi.nuid), from: 1}
	if index, ok := f.chunks.Get(fi.nuid); ok && skip > 0 && len(index) == int(fi.chunks) {
		k := sort.Search(len(index), func(i int) bool { return index[i].offset > skip }) - 1
		r.from, r.chunks, r.read, r.skip = index[k].seq, uint32(k), index[k].offset, skip-index[k].offset
	} else {
		r.index = make([]chunkAt, 0, fi.chunks) // read from the first chunk: learn where they are
	}
	return r
}

type fileReader struct {
	ctx     context.Context
	f       *Files
	fi      FileInfo
	subject string
	skip    int64     // bytes still to skip
	from    uint64    // stream sequence to fetch the next chunks from
	chunks  uint32    // chunks fetched, or passed over
	read    int64     // bytes fetched, or passed over
	pending [][]byte  // chunks fetched, not yet read
	cur     []byte    // the rest of the chunk being read
	index   []chunkAt // where the chunks are, when read from the first
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
	msgs, err := jetstreamext.GetBatch(r.ctx, r.f.js, filesStream, int(r.fi.chunks-r.chunks), jetstreamext.GetBatchSeq(r.from),
		jetstreamext.GetBatchSubject(r.subject), jetstreamext.GetBatchMaxBytes(fileReadBatchBytes))
	if err != nil {
		return fmt.Errorf("read file %s: %w", r.fi.Name, err)
	}
	got := 0
	for msg, err := range msgs {
		if err != nil {
			return fmt.Errorf("read file %s after %d bytes: %w", r.fi.Name, r.read, err)
		}
		if r.index != nil {
			r.index = append(r.index, chunkAt{seq: msg.Sequence, offset: r.read})
		}
		r.pending = append(r.pending, msg.Data)
		r.chunks, r.read, r.from = r.chunks+1, r.read+int64(len(msg.Data)), msg.Sequence+1
		got++
	}
	if got == 0 {
		return fmt.Errorf("read file %s: chunk %d of %d is missing", r.fi.Name, r.chunks+1, r.fi.chunks)
	}
	if r.index != nil && r.chunks == r.fi.chunks && r.read == r.fi.Size {
		// Every chunk found, as the reader of a response fetches them whether or not it then
		// reads past the last byte.
		r.f.chunks.Add(r.fi.nuid, r.index)
	}
	return nil
}
