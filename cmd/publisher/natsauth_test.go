package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/projections/dockey"
)

// TestEmbeddedNATSRequiresItsUser: the embedded server refuses every connection but the one user
// whose seed the process generated, only its owner reading it, and kept across restarts.
func TestEmbeddedNATSRequiresItsUser(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-24")
	url := m.NATS.ClientURL()
	seed := filepath.Join(dir, node.SeedFile)
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
	if pub, err := other.PublicKey(); err != nil {
		t.Fatal(err)
	} else if nc, err := nats.Connect(url, nats.Nkey(pub, other.Sign), nats.NoReconnect()); err == nil {
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
	if err := bad.Open(context.Background()); !errors.Is(err, secretfile.ErrOpen) {
		bad.Close()
		t.Errorf("open with a seed readable by others: %v, want a refusal naming the mode", err)
	}
}

// TestExternalNATSCredentials: roles connect to an external server with a password taken from the
// environment or a file, or an nkey seed file, and check its certificate against --nats-ca.
func TestExternalNATSCredentials(t *testing.T) {
	caFile, certFile, keyFile := natstest.WriteCertificate(t)
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
			env := map[string]string{node.PasswordEnv: opts.Password}
			switch name {
			case "wrong password":
				env[node.PasswordEnv] = "wrong"
			case "no password":
				delete(env, node.PasswordEnv)
			}
			var c Config
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.NATSAuth.Register(fs)
			if err := envflag.Parse(fs, args, func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			err := c.NATSAuth.Load(func(k string) string { return env[k] })
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
			c.PublicURL, c.SecretKeys = "https://menus.example", testSecretKeys
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

// TestForgedEventsAreNeverServed: events appended to the log behind the commands' back, by a
// client holding the NATS credentials, are checked again when read: a redirect to a javascript:
// URL, a key hash of the wrong form or a menu file on a data: URL is logged and skipped, and
// what was served before stays served.
func TestForgedEventsAreNeverServed(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22")
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo))

	opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, node.SeedFile))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(m.NATS.ClientURL(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := events.Bind(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	attacker := domain.NewAPIKey([32]byte{1, 2, 3})
	forged := []struct{ typ, payload string }{
		{domain.TypeMasterMenuChanged, `{"url":"javascript:alert(document.cookie)"}`},
		{domain.TypeAPIKeyRegenerated, `{"key_hash":"` + strings.ToUpper(attacker.Hash()) + `"}`},
		{domain.TypeAPIKeyRegenerated, `{"key_hash":"attacker"}`},
		{domain.TypeMenuVersionPublished, `{"menu_type":"la-carte","version":{"id":"forged","reference_date":null,"assets":[{"language_scope":"fr_en","urls":["data:text/html,<script>alert(1)</script>"]}],"sections":[]}}`},
		{domain.TypeIdentityChanged, `{"identity":{"name":"Chez Marcel","business_type":"restaurant","website_url":"javascript:alert(1)"}}`},
	}
	var last uint64
	for i, f := range forged {
		expected, err := store.LastSequence(t.Context(), "chez-marcel")
		if err != nil {
			t.Fatal(err)
		}
		last, err = store.Append(t.Context(), "chez-marcel", expected, fmt.Sprintf("forged-%d", i), []events.Envelope{{
			Type: f.typ, Time: time.Now(), SchemaVersion: domain.SchemaVersion, Payload: []byte(f.payload),
		}})
		if err != nil {
			t.Fatalf("append forged %s: %v", f.typ, err)
		}
	}
	// Once the last of them is projected and this node's mirror holds what the projector then
	// stored, nothing else changed the establishment meanwhile: what is served is what the forged
	// records made of it.
	if err := m.Served(t.Context(), "chez-marcel", last); err != nil {
		t.Fatal(err)
	}
	if got := m.get(t, est, key); got.status != 200 || !strings.Contains(string(got.body), `"name":"Chez Marcel"`) {
		t.Errorf("the demo's key after the forged events: %d %s", got.status, got.body)
	}
	if docs, err := m.Docs.Get(t.Context(), dockey.Key("chez-marcel")); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(docs.Value()), "javascript:") || strings.Contains(string(docs.Value()), "data:text") {
		t.Errorf("a forged URL is in the stored documents")
	}
	if got := m.get(t, est, string(attacker)); got.status != 401 {
		t.Errorf("the attacker's key: %d, want 401", got.status)
	}
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.status != 302 ||
		got.header.Get("Location") != "https://cdn.chez-marcel.example.fr/carte-complete.pdf" {
		t.Errorf("/r/master_menu: %d Location %q, want the card imported", got.status, got.header.Get("Location"))
	}
	if got := m.get(t, est+"/menus/la-carte", key); strings.Contains(string(got.body), "data:") || strings.Contains(string(got.body), "forged") {
		t.Errorf("a forged menu version is served: %s", got.body)
	}
	// The write side skipped them too: an export shows none of their values.
	if got := m.admin(t, http.MethodGet, "/admin/v1/establishments/chez-marcel", nil); strings.Contains(string(got.body), "javascript:") {
		t.Errorf("the admin API shows a forged value: %s", got.body)
	}
}

// TestCredentialsInTheURLAreNotLogged: a password given in --nats-url, as some deployments
// still do, appears in no log line, neither at the start nor when the connection drops and
// comes back.
func TestCredentialsInTheURLAreNotLogged(t *testing.T) {
	const password = "pa55-in-the-url"
	port := natstest.FreePort(t)
	opts := natstest.Options(t.TempDir())
	opts.Port, opts.Username, opts.Password = port, "publisher", password
	srv := natstest.StartWith(t, opts)
	logs := &syncBuffer{}
	m := &Main{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Config: Config{
		NATSURL: fmt.Sprintf("nats://publisher:%s@127.0.0.1:%d", password, port), Replicas: 1, Roles: []string{roleAdmin},
		AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken, DuplicateTTL: time.Hour, ClockEvery: time.Hour,
		PublicURL: "https://menus.example", SecretKeys: testSecretKeys,
	}}
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	eventually(t, "the drop logged", func() bool { return strings.Contains(logs.String(), "nats disconnected") })
	natstest.StartWith(t, opts)
	eventually(t, "the reconnection logged", func() bool { return strings.Contains(logs.String(), "nats reconnected") })
	if strings.Contains(logs.String(), password) {
		t.Errorf("the password is in the logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("127.0.0.1:%d", port)) {
		t.Errorf("the logs do not name the server:\n%s", logs.String())
	}
}
