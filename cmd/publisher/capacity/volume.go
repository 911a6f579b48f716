//go:build linux || darwin || freebsd

package capacity

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Volume returns the space the volume holding path has free for an unprivileged writer, and its
// size.
func Volume(path string) (free, size uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("capacity: statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return uint64(st.Bavail) * bsize, uint64(st.Blocks) * bsize, nil
}
