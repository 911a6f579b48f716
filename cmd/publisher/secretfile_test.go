package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/webhook"
)

// startOn opens the whole binary's wiring on an embedded NATS server in dir, as openMain does, but
// returns the error of a start that fails.
func startOn(tb testing.TB, dir string, options ...func(*Config)) (*Main, error) {
	tb.Helper()
	m := &Main{Config: Config{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		AdminToken: testAdminToken, Replicas: 1, DuplicateTTL: time.Hour, ClockEvery: time.Hour, KeyQuota: -1, IPQuota: -1}}
	for _, o := range options {
		o(&m.Config)
	}
	if err := m.Open(context.Background()); err != nil {
		return nil, err
	}
	tb.Cleanup(m.Close)
	return m, nil
}

// TestSecretFilesOthersCanReadAreRefused: the admin token and the master key of webhook signing
// secrets, in the data directory or in files given by flag, are refused at start when their mode
// lets group or others in, with an error naming the file and the chmod that fixes it; the owner's
// alone, they are used.
func TestSecretFilesOthersCanReadAreRefused(t *testing.T) {
	const token = "adm_0123456789abcdef0123456789abcdef"
	cases := []struct {
		name      string
		file      func(dataDir, other string) string
		content   string
		config    func(c *Config, file string)
		wantToken string // the admin token the file gives, if it holds one
	}{
		{"the data directory's admin token", func(d, _ string) string { return filepath.Join(d, "admin-token") }, token + "\n",
			func(c *Config, _ string) { c.AdminToken = "" }, token},
		{"--admin-token-file", func(_, o string) string { return filepath.Join(o, "token") }, token + "\n",
			func(c *Config, f string) { c.AdminToken, c.AdminTokenFile = "", f }, token},
		{"the data directory's master key", func(d, _ string) string { return filepath.Join(d, defaultSecretKeyFile) }, webhook.NewMasterKey() + "\n",
			func(*Config, string) {}, ""},
		{"--secret-key-file", func(_, o string) string { return filepath.Join(o, "key") }, webhook.NewMasterKey() + "\n",
			func(c *Config, f string) { c.SecretKeyFile = f }, ""},
	}
	for _, c := range cases {
		for _, mode := range []os.FileMode{0o644, 0o640, 0o600} {
			t.Run(fmt.Sprintf("%s/%04o", c.name, mode), func(t *testing.T) {
				dir, other := t.TempDir(), t.TempDir()
				file := c.file(dir, other)
				if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(file, mode); err != nil { // beyond the umask
					t.Fatal(err)
				}
				m, err := startOn(t, dir, func(cfg *Config) { c.config(cfg, file) })
				if mode != 0o600 {
					if !errors.Is(err, secretfile.ErrOpen) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "chmod 600 "+file) {
						t.Errorf("start with %s at mode %04o: got %v, want a refusal naming %s and chmod 600 %s", c.name, mode, err, file, file)
					}
					return
				}
				if err != nil {
					t.Fatalf("start with %s at mode 0600: %v", c.name, err)
				}
				if c.wantToken != "" && m.AdminToken != c.wantToken {
					t.Errorf("admin token: got %q, want %q from %s", m.AdminToken, c.wantToken, file)
				}
			})
		}
	}
}

// TestSecretFilesTheServiceWritesAreTheOwners: the admin token, the master key and the NATS seed a
// first start generates are 0600, in a data directory only its owner enters, and a second start
// takes them as they are.
func TestSecretFilesTheServiceWritesAreTheOwners(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	noToken := func(c *Config) { c.AdminToken = "" }
	m, err := startOn(t, dir, noToken)
	if err != nil {
		t.Fatal(err)
	}
	token := m.AdminToken
	m.Close()
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("data directory: got %v, %v; want mode 0700", info, err)
	}
	for _, name := range []string{"admin-token", defaultSecretKeyFile, node.SeedFile} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: got %v, %v; want mode 0600", name, info, err)
		}
	}
	m, err = startOn(t, dir, noToken)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	if m.AdminToken != token {
		t.Errorf("admin token after a restart: got %q, want the first start's %q", m.AdminToken, token)
	}
	if r := do(t, http.MethodGet, m.AdminURL+"/admin/v1/status", nil, "Authorization", "Bearer "+token); r.status != http.StatusOK {
		t.Errorf("status with the kept token: got %d, want 200", r.status)
	}
}
