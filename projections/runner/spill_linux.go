package runner

import "golang.org/x/sys/unix"

// freeSpace returns the bytes free to an unprivileged user on the file system of dir and its size.
func freeSpace(dir string) (free, total uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	unit := uint64(st.Frsize) // the unit of the counts, as df reads them
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	return st.Bavail * unit, st.Blocks * unit, true
}
