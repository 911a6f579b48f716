package projections

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// spill holds the records of a replay's later passes in temporary files, one per pass, so that a
// replay in several passes reads the log once: its first pass replays its own share of the
// establishments and writes every other record, as stored, to the file of the pass that replays
// its establishment; each later pass reads its file instead of the log. The files take about the
// log's size on disk, each only until its pass is done. They are removed from the directory as
// soon as they are created, so that nothing is left behind by a process that stops halfway, on
// systems that let an open file be removed.
type spill struct {
	files []*spillFile // by pass; nil for the first
}

// spillFile is the file of one pass: records framed as the uvarint of the sequence, then the
// uvarint length and bytes of the slug, then those of the message's data.
type spillFile struct {
	f       *os.File
	name    string
	w       *bufio.Writer
	records int
}

// spillBuffer is the write buffer of each pass's file: a replay of a million establishments in a
// hundred passes holds a hundred of them.
const spillBuffer = 64 << 10

// maxSpilled bounds the length of what a file holds, a message of the log being at most the
// largest payload a NATS server takes (64 MiB): a larger one is a damaged file.
const maxSpilled = 64 << 20

// newSpill creates in dir (os.TempDir() when empty) the files of passes-1 later passes.
func newSpill(dir string, passes int) (*spill, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill the records of later passes: %w", err)
	}
	s := &spill{files: make([]*spillFile, passes)}
	for pass := 1; pass < passes; pass++ {
		f, err := os.CreateTemp(dir, "publisher-replay-*")
		if err != nil {
			s.close()
			return nil, fmt.Errorf("spill the records of later passes: %w", err)
		}
		_ = os.Remove(f.Name()) // where an open file cannot be removed, drop removes it
		s.files[pass] = &spillFile{f: f, name: f.Name(), w: bufio.NewWriterSize(f, spillBuffer)}
	}
	return s, nil
}

// reset empties every file, for a first pass made again.
func (s *spill) reset() error {
	for _, sf := range s.files {
		if sf == nil {
			continue
		}
		sf.w.Reset(sf.f)
		sf.records = 0
		if err := sf.f.Truncate(0); err != nil {
			return err
		}
		if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	return nil
}

// add writes a record of the log to the file of pass.
func (s *spill) add(pass int, slug string, seq uint64, data []byte) error {
	sf := s.files[pass]
	var n [binary.MaxVarintLen64]byte
	if _, err := sf.w.Write(binary.AppendUvarint(n[:0], seq)); err != nil {
		return err
	}
	if _, err := sf.w.Write(binary.AppendUvarint(n[:0], uint64(len(slug)))); err != nil {
		return err
	}
	if _, err := sf.w.WriteString(slug); err != nil {
		return err
	}
	if _, err := sf.w.Write(binary.AppendUvarint(n[:0], uint64(len(data)))); err != nil {
		return err
	}
	if _, err := sf.w.Write(data); err != nil {
		return err
	}
	sf.records++
	return nil
}

// flush writes out what every file's buffer holds, once the first pass is done.
func (s *spill) flush() error {
	for _, sf := range s.files {
		if sf != nil {
			if err := sf.w.Flush(); err != nil {
				return fmt.Errorf("spill the records of later passes: %w", err)
			}
		}
	}
	return nil
}

// each calls fn, in the order they were added, with the records of pass's file.
func (s *spill) each(pass int, fn func(slug string, seq uint64, data []byte) error) error {
	sf := s.files[pass]
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(sf.f, spillBuffer)
	for i := range sf.records {
		seq, err := binary.ReadUvarint(r)
		if err != nil {
			return spillReadError(i, err)
		}
		slug, err := readFramed(r)
		if err != nil {
			return spillReadError(i, err)
		}
		data, err := readFramed(r)
		if err != nil {
			return spillReadError(i, err)
		}
		if err := fn(string(slug), seq, data); err != nil {
			return err
		}
	}
	return nil
}

func spillReadError(i int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read record %d of the pass's file: %w", i, err)
}

// readFramed reads a uvarint length, then as many bytes, into a slice of their own.
func readFramed(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxSpilled {
		return nil, fmt.Errorf("a length of %d bytes: the file is damaged", n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

// drop closes the file of pass, freeing its space, once the pass is done.
func (s *spill) drop(pass int) {
	if sf := s.files[pass]; sf != nil {
		_ = sf.f.Close()
		_ = os.Remove(sf.name) // gone already, but where it could not be while open
		s.files[pass] = nil
	}
}

// close closes every file left.
func (s *spill) close() {
	for pass := range s.files {
		s.drop(pass)
	}
}
