package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errSecretFileOpen means a file holding a secret lets its group or others read or write it.
var errSecretFileOpen = errors.New("accessible by group or others")

// readSecretFile reads a file holding a secret (the admin token, the master key of webhook
// signing secrets, a NATS seed, password, credentials or TLS key), refusing one whose mode lets
// its group or others in: a secret every user of the machine can read is none, and a file that is not the
// owner's alone may have been replaced. It checks the mode bits, not whether another user could
// open the file, which root can whatever they say. The service writes its own secret files 0600.
func readSecretFile(path string) ([]byte, error) {
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
		return nil, fmt.Errorf("%s: %w (mode %04o, want 0600): chmod 600 %s", path, errSecretFileOpen, perm, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
