//go:build !unix

package capacity

// OpenFileLimit is not known on this system: a common default.
func OpenFileLimit() uint64 { return 1024 }
