//go:build unix

package capacity

import "syscall"

// OpenFileLimit returns the process's limit of open files. The Go runtime raised it to the hard
// limit at start, as servers do.
func OpenFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return rl.Cur
}
