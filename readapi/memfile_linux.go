package readapi

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// memFile holds the bytes of a cached file in an anonymous file in memory (memfd_create(2)).
// Each request opens it anew, through /proc, with an offset of its own, and net/http sends an
// *os.File with sendfile(2): the bytes go from memory to the socket without passing through the
// process, several times faster than writing them from a byte slice.
type memFile struct {
	f    *os.File
	path string
	id   unix.Stat_t // the device and inode a descriptor opened by path must have
}

// newMemFile copies size bytes from r into a new memory file, failing with errNoMemFile where
// the system has none (or no /proc to open it by) and if r holds another number of bytes.
func newMemFile(name string, r io.Reader, size int64) (*memFile, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoMemFile, err)
	}
	m := &memFile{f: os.NewFile(uintptr(fd), name), path: "/proc/self/fd/" + strconv.Itoa(fd)}
	if err := unix.Fstat(fd, &m.id); err != nil {
		m.close()
		return nil, fmt.Errorf("%w: %v", errNoMemFile, err)
	}
	probe, err := m.open()
	if err != nil {
		m.close()
		return nil, fmt.Errorf("%w: %v", errNoMemFile, err)
	}
	probe.Close()
	n, err := io.Copy(m.f, r)
	if err == nil && n != size {
		err = fmt.Errorf("file %s has %d bytes or more, its description says %d", name, n, size)
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// open returns a descriptor of the memory file with its own offset, read-only. It checks that
// the descriptor is of the memory file: were the file closed, its number could name any other.
func (m *memFile) open() (*os.File, error) {
	f, err := os.Open(m.path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Dev != m.id.Dev || st.Ino != m.id.Ino {
		f.Close()
		return nil, fmt.Errorf("%s no longer names the memory file of %s", m.path, m.f.Name())
	}
	return f, nil
}

func (m *memFile) close() { m.f.Close() }

// reader reads the memory file's size bytes through its own descriptor, at offsets: no
// descriptor more, and no sendfile.
func (m *memFile) reader(size int64) io.ReadSeeker { return io.NewSectionReader(m.f, 0, size) }
