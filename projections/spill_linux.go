package projections

import "golang.org/x/sys/unix"

// freeSpace returns the bytes free to an unprivileged user on the file system of dir and its size.
func freeSpace(dir string) (free, total uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), true
}
