//go:build !linux

package readapi

import (
	"io"
	"os"
)

// memFile is not available on this system: cached files are held in the process's memory.
type memFile struct{}

func newMemFile(string, io.Reader, int64) (*memFile, error) { return nil, errNoMemFile }

func (*memFile) open() (*os.File, error) { return nil, errNoMemFile }

func (*memFile) close() {}

func (*memFile) reader(int64) io.ReadSeeker { return nil }
