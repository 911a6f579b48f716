package main

import (
	"context"
	"io"
	"net"
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
