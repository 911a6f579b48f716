//go:build !(linux || darwin || freebsd)

package capacity

import "errors"

// Volume is not known on this system: only JetStream's own count is watched.
func Volume(path string) (free, size uint64, err error) {
	return 0, 0, errors.New("capacity: the free space of a volume is not known on this system")
}
