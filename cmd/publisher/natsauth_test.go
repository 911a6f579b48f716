package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/opencarte/publisher/events/natstest"
)

// TestEmbeddedNATSRequiresItsUser: the embedded server refuses every connection but the one user
// whose seed the process generated, only its owner reading it, and kept across restarts.
func TestEmbeddedNATSRequiresItsUser(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-24")
	url := m.NATS.ClientURL()
	seed := filepath.Join(dir, embeddedSeedFile)
	info, err := os.Stat(seed)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("seed file mode %o, want 600", info.Mode().Perm())
	}

	if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("an anonymous connection was accepted")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("anonymous connection: %v, want an authorization violation", err)
	}
	other, _ := nkeys.CreateUser()
	if opt, err := nkeyOption(other); err != nil {
		t.Fatal(err)
	} else if nc, err := nats.Connect(url, opt, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("another nkey user was accepted")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("publisher", ""), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("a user without a password was accepted")
	}
	opt, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opt, nats.NoReconnect())
	if err != nil {
		t.Fatalf("the generated user was refused: %v", err)
	}
	if _, err := nc.JetStream(); err != nil {
		t.Error(err)
	}
	nc.Close()

	// A restart keeps the user: the same seed, and the service starts on it.
	before, _ := os.ReadFile(seed)
	m.Close()
	m = openMain(t, dir, "2026-11-24")
	if after, _ := os.ReadFile(seed); string(after) != string(before) {
		t.Error("the seed changed across a restart")
	}
	m.Close()

	// A seed others can read is refused rather than used.
	if err := os.Chmod(seed, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := &Main{Config: Config{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		AdminToken: testAdminToken, Replicas: 1, DuplicateTTL: time.Hour, ClockEvery: time.Hour}}
	if err := bad.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "want 0600") {
		bad.Close()
		t.Errorf("open with a seed readable by others: %v, want a refusal naming the mode", err)
	}
}

// TestExternalNATSCredentials: roles connect to an external server with a password taken from the
// environment or a file, or an nkey seed file, and check its certificate against --nats-ca.
func TestExternalNATSCredentials(t *testing.T) {
	caFile, certFile, keyFile := writeTestCertificate(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	opts := natstest.Options(t.TempDir())
	opts.Username, opts.Password = "publisher", "s3cret-from-a-file"
	opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	opts.TLS, opts.TLSTimeout = true, 2
	srv := natstest.StartWith(t, opts)

	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte(opts.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"password file":    {"--nats-user", "publisher", "--nats-password-file", passwordFile, "--nats-ca", caFile},
		"password env":     {"--nats-user", "publisher", "--nats-ca", caFile},
		"no ca":            {"--nats-user", "publisher", "--nats-password-file", passwordFile},
		"wrong password":   {"--nats-user", "publisher", "--nats-ca", caFile},
		"no password":      {"--nats-user", "publisher", "--nats-ca", caFile},
		"two credentials":  {"--nats-user", "publisher", "--nats-nkey", passwordFile},
		"cert without key": {"--nats-cert", certFile},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{natsPasswordEnv: opts.Password}
			switch name {
			case "wrong password":
				env[natsPasswordEnv] = "wrong"
			case "no password":
				delete(env, natsPasswordEnv)
			}
			var c Config
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.NATSAuth.register(fs)
			if err := parseFlags(fs, args, func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			err := c.NATSAuth.load(func(k string) string { return env[k] })
			switch name {
			case "no password", "two credentials", "cert without key":
				if err == nil {
					t.Fatal("load accepted the flags")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.NATSURL, c.Replicas, c.Roles = srv.ClientURL(), 1, []string{roleAdmin}
			c.AdminAddr, c.AdminToken, c.DuplicateTTL, c.ClockEvery = "127.0.0.1:0", testAdminToken, time.Hour, time.Hour
			c.PublicURL = "https://menus.example"
			m := &Main{Config: c}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err = m.Open(ctx)
			if ctx.Err() != nil {
				t.Errorf("open waited %v for what cannot change", time.Since(start))
			}
			if err == nil {
				defer m.Close()
			}
			switch name {
			case "password file", "password env":
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				if st := do(t, "GET", m.AdminURL+"/admin/v1/status", nil, "Authorization", "Bearer "+testAdminToken).status; st != 200 {
					t.Errorf("status call: %d", st)
				}
			default:
				if err == nil {
					t.Fatal("open succeeded")
				}
				if strings.Contains(err.Error(), opts.Password) {
					t.Errorf("error names the password: %v", err)
				}
			}
		})
	}
}

// writeTestCertificate writes a self-signed certificate for 127.0.0.1, its key, and the same
// certificate as the authority to trust.
func writeTestCertificate(t *testing.T) (ca, cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nats test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, cert, key
}
