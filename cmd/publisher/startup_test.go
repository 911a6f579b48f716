package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBusyAddressFailsServeAtOnce: each address serve listens on, taken by another process, fails
// the start at once (long before the embedded server's 30 s start limit), with the address, the
// cause and the flag that sets it; the others are left free.
func TestBusyAddressFailsServeAtOnce(t *testing.T) {
	for _, flag := range []string{"--nats-listen", "--http", "--admin", "--metrics"} {
		t.Run(flag, func(t *testing.T) {
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer busy.Close()
			addrs := map[string]string{"--nats-listen": "127.0.0.1:-1", "--http": "127.0.0.1:0", "--admin": "127.0.0.1:0", "--metrics": "127.0.0.1:0"}
			addrs[flag] = busy.Addr().String()
			args := []string{"--data-dir", t.TempDir(), "--admin-token", testAdminToken}
			for f, a := range addrs {
				args = append(args, f, a)
			}
			err = serveWithin(t, args)
			if err == nil {
				t.Fatalf("serve ran with %s %s taken, want it refused", flag, busy.Addr())
			}
			for _, want := range []string{busy.Addr().String(), "address already in use", flag} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// serveWithin runs serve with args and returns its error, failing the test unless it returns
// within a generous bound; its context ends then, so that a serve that started returns nil.
func serveWithin(t *testing.T, args []string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, args, io.Discard, io.Discard, noEnv) }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return within 20s")
		return nil
	}
}

// TestDemoRestartKeepsTheUsersState: a second serve --demo on the same data directory loads
// nothing over the store, keeping an edit made after the first, and shows the key the first
// issued, which still opens the API; once the key is regenerated, a later start says the kept one
// no longer does and how to get one, rather than showing it.
func TestDemoRestartKeepsTheUsersState(t *testing.T) {
	dir := t.TempDir()
	demo := func() (*Main, string) {
		t.Helper()
		m := testMain(dir, "2026-11-22", func(c *Config) { c.Demo = true })
		if err := m.Open(t.Context()); err != nil {
			t.Fatalf("open: %v", err)
		}
		var out bytes.Buffer
		if err := m.loadDemo(t.Context(), &out); err != nil {
			m.Close()
			t.Fatalf("demo: %v", err)
		}
		return m, out.String()
	}
	keyIn := regexp.MustCompile(`(?m)^API key: (pk_\S+)$`)

	m, out := demo()
	first := keyIn.FindStringSubmatch(out)
	if first == nil {
		m.Close()
		t.Fatalf("first start printed %s, want an API key", out)
	}
	const menus = "/r/menus?establishment=chez-marcel&menu_type=la-carte&locale=en"
	if r := m.get(t, menus, ""); r.status != http.StatusFound {
		t.Errorf("the menu redirect: got %d %s, want a redirect", r.status, r.body)
	}
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-redirect", []byte(`{"enabled":false}`)); r.status != http.StatusOK {
		t.Errorf("turn the menu redirect off: got %d %s", r.status, r.body)
	}
	cardIn := regexp.MustCompile(`curl -sI http://127\.0\.0\.1:\d+(/files/\S+)`) // a random port each start
	firstCard := cardIn.FindStringSubmatch(out)
	m.Close()

	m, out = demo()
	if got := keyIn.FindStringSubmatch(out); got == nil || got[1] != first[1] {
		t.Errorf("second start printed %s, want the first's key %s", out, first[1])
	}
	if !strings.Contains(out, "only into an empty store") || !strings.Contains(out, filepath.Join(dir, demoKeyFile)) {
		t.Errorf("second start printed %s, want it to say the store was left as it is and where the key comes from", out)
	}
	if r := m.get(t, est, first[1]); r.status != http.StatusOK {
		t.Errorf("with the first key: got %d %s, want 200", r.status, r.body)
	}
	if r := m.get(t, menus, ""); r.status == http.StatusFound {
		t.Errorf("the menu redirect turned off before the restart: got %d to %s, want it still off", r.status, r.header.Get("Location"))
	}
	if card := cardIn.FindStringSubmatch(out); firstCard == nil || card == nil || card[1] != firstCard[1] {
		t.Errorf("second start: got the unified card at %q, want it where the first put it, %q", card, firstCard)
	}
	if r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/api/regenerate-key", nil); r.status != http.StatusOK {
		t.Errorf("regenerate the key: got %d %s", r.status, r.body)
	}
	m.Close()

	m, out = demo()
	defer m.Close()
	if keyIn.MatchString(out) || strings.Contains(out, first[1]) || !strings.Contains(out, "publisher admin regenerate-key chez-marcel") {
		t.Errorf("after a regeneration, a start printed %s, want no key but how to get one", out)
	}
}

// TestPrivateWebhookReceiverRefusalNamesTheFlag: registering a receiver on a loopback address,
// without --webhook-allow-private, is refused with a 422 whose message names the flags that allow
// it.
func TestPrivateWebhookReceiverRefusalNamesTheFlag(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo); r.status != http.StatusCreated {
		t.Fatalf("import: got %d %s", r.status, r.body)
	}
	r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "https://127.0.0.1:8443/hook"}`))
	const want = "127.0.0.1 is loopback: serve allows it with --webhook-allow-private (local use only), or its network with --webhook-allowed-networks"
	if r.status != http.StatusUnprocessableEntity || !bytes.Contains(r.body, []byte(want)) {
		t.Errorf("register a loopback receiver: got %d %s, want 422 saying %q", r.status, r.body, want)
	}
}
