package runner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// spill holds the records of a replay's later passes in temporary files, so that a replay in
// several passes reads the log once: its first pass replays its own share of the establishments
// and writes every other record, as stored, to the file of the pass that replays its
// establishment; each later pass reads its file instead of the log. The files take about the
// log's size on disk, each only until its last pass is done. They are removed from the directory
// as soon as they are created, so that nothing is left behind by a process that stops halfway,
// on systems that let an open file be removed.
//
// There are at most maxSpillFiles files, whatever the number of passes: pass k writes to and
// reads file (k-1) mod maxSpillFiles, passing over the records of the other passes that share it.
// Spilling stops, and the later passes read the log instead, when the file system's free space
// falls to its reserve (spillReserve), so that the files never fill the disk the NATS store may
// share.
type spill struct {
	dir     string
	passes  int
	files   []*spillFile
	failed  error // why spilling stopped, if it did
	written int64 // bytes written since the free space was last checked
}

// spillFile is one file: records framed as the uvarint of the sequence, then the uvarint length
// and bytes of the slug, then those of the message's data.
type spillFile struct {
	f    *os.File
	name string
	w    *bufio.Writer
}

const (
	// maxSpillFiles bounds the files of a replay, and so its descriptors and write buffers.
	maxSpillFiles = 64
	// spillBuffer is the write buffer of each file.
	spillBuffer = 64 << 10
	// spillCheckEvery is how many bytes are written between two looks at the free space.
	spillCheckEvery = 64 << 20
	// maxSpilled bounds the length of what a file holds, a message of the log being at most the
	// largest payload a NATS server takes (64 MiB): a larger one is a damaged file.
	maxSpilled = 64 << 20
)

// errSpill marks a failure of the files, after which the later passes read the log.
var errSpill = errors.New("the records of the later passes cannot be kept on disk")

// spillReserve is the free space spilling leaves on a file system of total bytes: 1 GiB and a
// twentieth of it.
func spillReserve(total uint64) uint64 { return 1<<30 + total/20 }

// newSpill creates in dir (os.TempDir() when empty) the files of the passes after the first.
func newSpill(dir string, passes int) (*spill, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", errSpill, err)
	}
	s := &spill{dir: dir, passes: passes, files: make([]*spillFile, min(passes-1, maxSpillFiles))}
	for i := range s.files {
		f, err := os.CreateTemp(dir, "publisher-replay-*")
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%w: %w", errSpill, err)
		}
		_ = os.Remove(f.Name()) // where an open file cannot be removed, drop removes it
		s.files[i] = &spillFile{f: f, name: f.Name(), w: bufio.NewWriterSize(f, spillBuffer)}
	}
	if err := s.roomLeft(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// fileOf returns the file of pass, 1 or more.
func (s *spill) fileOf(pass int) *spillFile { return s.files[(pass-1)%len(s.files)] }

// roomLeft checks that the file system of the files has more free space than its reserve.
func (s *spill) roomLeft() error {
	free, total, ok := freeSpace(s.dir)
	if ok && free <= spillReserve(total) {
		return fmt.Errorf("%w: %d MiB free under %s, no more than the %d MiB kept free", errSpill, free>>20, s.dir, spillReserve(total)>>20)
	}
	return nil
}

// reset empties every file, for a first pass made again.
func (s *spill) reset() error {
	s.failed, s.written = nil, 0
	for _, sf := range s.files {
		if sf == nil {
			return fmt.Errorf("%w: a file is closed", errSpill)
		}
		sf.w.Reset(sf.f)
		if err := sf.f.Truncate(0); err != nil {
			return fmt.Errorf("%w: %w", errSpill, err)
		}
		if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("%w: %w", errSpill, err)
		}
	}
	return nil
}

// add writes a record of the log to the file of pass. After a failure, or once the free space
// reaches its reserve, it writes nothing more: flush tells why.
func (s *spill) add(pass int, slug string, seq uint64, data []byte) {
	if s.failed != nil {
		return
	}
	w := s.fileOf(pass).w
	var n [binary.MaxVarintLen64]byte
	_, _ = w.Write(binary.AppendUvarint(n[:0], seq))
	_, _ = w.Write(binary.AppendUvarint(n[:0], uint64(len(slug))))
	_, _ = w.WriteString(slug)
	_, _ = w.Write(binary.AppendUvarint(n[:0], uint64(len(data))))
	if _, err := w.Write(data); err != nil { // a bufio.Writer keeps its first error
		s.failed = fmt.Errorf("%w: %w", errSpill, err)
		return
	}
	if s.written += int64(len(slug) + len(data) + 3*binary.MaxVarintLen64); s.written >= spillCheckEvery {
		s.written = 0
		s.failed = s.roomLeft()
	}
}

// flush writes out what every file's buffer holds, once the first pass is done, and returns why
// spilling stopped, if it did: the later passes must then read the log.
func (s *spill) flush() error {
	if s.failed != nil {
		return s.failed
	}
	for _, sf := range s.files {
		if err := sf.w.Flush(); err != nil {
			return fmt.Errorf("%w: %w", errSpill, err)
		}
	}
	return nil
}

// each calls fn, in the order they were added, with the records of pass, those keep accepts of the
// ones in its file; data is only valid until fn returns, its bytes then reused for the next record.
// A failure to read the file is an errSpill.
func (s *spill) each(pass int, keep func(slug string) bool, fn func(slug string, seq uint64, data []byte) error) error {
	sf := s.fileOf(pass)
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %w", errSpill, err)
	}
	r := bufio.NewReaderSize(sf.f, spillBuffer)
	var buf, slugBuf []byte
	for i := 0; ; i++ {
		seq, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil // the end of the file, between two records
		}
		if err != nil {
			return spillReadError(i, err)
		}
		slugBuf, err = readFramed(r, true, slugBuf)
		if err != nil {
			return spillReadError(i, err)
		}
		slug := string(slugBuf)
		kept := keep(slug)
		data, err := readFramed(r, kept, buf)
		if err != nil {
			return spillReadError(i, err)
		}
		if !kept {
			continue
		}
		buf = data
		if err := fn(slug, seq, data); err != nil {
			return err
		}
	}
}

func spillReadError(i int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: read record %d of the file: %w", errSpill, i, err)
}

// readFramed reads a uvarint length, then as many bytes: into buf, grown if it must be, when keep
// is set; passed over otherwise.
func readFramed(r *bufio.Reader, keep bool, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxSpilled {
		return nil, fmt.Errorf("a length of %d bytes: the file is damaged", n)
	}
	if !keep {
		_, err := r.Discard(int(n))
		return nil, err
	}
	b := slices.Grow(buf[:0], int(n))[:n]
	_, err = io.ReadFull(r, b)
	return b, err
}

// done frees the file of pass once no later pass reads it.
func (s *spill) done(pass int) {
	if pass+len(s.files) < s.passes {
		return // pass+len(files) shares it
	}
	s.closeFile((pass - 1) % len(s.files))
}

func (s *spill) closeFile(i int) {
	if sf := s.files[i]; sf != nil {
		_ = sf.f.Close()
		_ = os.Remove(sf.name) // gone already, but where it could not be while open
		s.files[i] = nil
	}
}

// close closes every file left.
func (s *spill) close() {
	for i := range s.files {
		s.closeFile(i)
	}
}
