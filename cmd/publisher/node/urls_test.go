package node

import "testing"

func TestRedactedURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:secret@n1:4222":                     "nats://n1:4222",
		"nats://token@n1:4222, nats://u:p@n2:4222":       "nats://n1:4222,nats://n2:4222",
		"nats://n1:4222":                                 "nats://n1:4222",
		"tls://admin:pa%40ss@nats.internal:4443/?x=1#fr": "tls://nats.internal:4443/?x=1#fr",
		"svc:S3cret@127.0.0.1:4222":                      "127.0.0.1:4222",
		"nats://u:pa#ss@h:4222":                          "nats://h:4222",
		"nats://u:1234/x@h:4222":                         "nats://h:4222",
	} {
		if got := redactedURL(in); got != want {
			t.Errorf("redactedURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoopbackURL: verify uses the local data directory's user only for a server on this machine.
func TestLoopbackURL(t *testing.T) {
	for url, want := range map[string]bool{
		"nats://127.0.0.1:4222":                      true,
		"nats://localhost:4222, nats://[::1]:4222":   true,
		"127.0.0.1:4222":                             true,
		"nats://u:p@127.0.0.1:4222":                  true,
		"nats://nats-1:4222":                         false,
		"nats://127.0.0.1:4222,nats://10.0.0.2:4222": false,
		"tls://nats.example.com:4222":                false,
		"nats://127.0.0.1.attacker.example:4222":     false,
	} {
		if got := loopbackURL(url); got != want {
			t.Errorf("loopbackURL(%q) = %v, want %v", url, got, want)
		}
	}
}
