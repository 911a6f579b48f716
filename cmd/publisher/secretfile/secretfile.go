package secretfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrOpen means a file holding a secret lets its group or others read or write it.
var ErrOpen = errors.New("accessible by group or others")

// Read reads a file holding a secret, refusing one whose mode lets its group or others in: a
// secret every user of the machine can read is none, and a file that is not the owner's alone
// may have been replaced. It checks the mode bits, not whether another user could open the file,
// which root can whatever they say. The service writes its own secret files 0600.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s: %w (mode %04o, want 0600): chmod 600 %s", path, ErrOpen, perm, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// CreateOnce writes content to a new file at path that only its owner reads, and says whether it
// did: of two processes starting on one directory, the second finds the first's file and keeps
// it. A file whose write failed is removed, since a partial one would stop every later start.
func CreateOnce(path string, content []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr := f.Write(content)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(path)
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
