//go:build !(linux || darwin || freebsd)

package capacity

// Volume is not known on this system: only JetStream's own count is watched.
func Volume(path string) (free, size uint64, err error) {
	return 0, 0, ErrNoVolume
}
