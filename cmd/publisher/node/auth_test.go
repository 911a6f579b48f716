package node

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/events/natstest"
)

// TestNATSCredentialFilesOthersCanReadAreRefused: the files holding an external NATS's
// credentials are refused at start when group or others can open them, naming the flag, the file
// and the chmod that fixes it; the owner's alone, they are taken.
func TestNATSCredentialFilesOthersCanReadAreRefused(t *testing.T) {
	_, cert, _ := natstest.WriteCertificate(t)
	cases := []struct {
		flag string
		args []string // the other flags it needs
	}{
		{"--nats-password-file", []string{"--nats-user", "publisher"}},
		{"--nats-nkey", nil},
		{"--nats-creds", nil},
		{"--nats-key", []string{"--nats-cert", cert}},
	}
	for _, c := range cases {
		for _, mode := range []os.FileMode{0o644, 0o640, 0o600} {
			t.Run(fmt.Sprintf("%s/%04o", c.flag, mode), func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "secret")
				if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(file, mode); err != nil {
					t.Fatal(err)
				}
				var a Auth
				fs := flag.NewFlagSet("serve", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				a.Register(fs)
				if err := fs.Parse(append([]string{c.flag, file}, c.args...)); err != nil {
					t.Fatal(err)
				}
				err := a.Load(func(string) string { return "" })
				if mode == 0o600 {
					if err != nil {
						t.Errorf("%s at mode 0600: got %v, want it taken", c.flag, err)
					}
					return
				}
				if msg := fmt.Sprint(err); !errors.Is(err, secretfile.ErrOpen) || !strings.HasPrefix(msg, c.flag+": ") || !strings.Contains(msg, "chmod 600 "+file) {
					t.Errorf("%s at mode %04o: got %v, want a refusal naming the flag and chmod 600 %s", c.flag, mode, err, file)
				}
			})
		}
	}
}
