package secretfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRead: the mode bits decide, not who could open the file (tests run as root).
func TestRead(t *testing.T) {
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o700, true},
		{0o644, false},
		{0o640, false},
		{0o604, false},
		{0o620, false},
		{0o602, false},
		{0o610, false},
	} {
		t.Run(fmt.Sprintf("%04o", c.mode), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(file, []byte("s3cret"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, c.mode); err != nil {
				t.Fatal(err)
			}
			b, err := Read(file)
			switch {
			case c.ok && (err != nil || string(b) != "s3cret"):
				t.Errorf("mode %04o: got %q, %v; want the content", c.mode, b, err)
			case !c.ok && (!errors.Is(err, ErrOpen) || b != nil):
				t.Errorf("mode %04o: got %q, %v; want a refusal", c.mode, b, err)
			}
		})
	}
}
