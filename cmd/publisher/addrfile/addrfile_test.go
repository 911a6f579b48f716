package addrfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReachable gives a wildcard listener's URL a loopback host, which a client on the same
// machine reaches, and leaves any other as it is.
func TestReachable(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":    "nats://127.0.0.1:4222",
		"nats://0.0.0.0:4223":      "nats://127.0.0.1:4223",
		"nats://[::]:4224":         "nats://[::1]:4224",
		"http://:8081":             "http://127.0.0.1:8081",
		"nats://10.0.0.7:4225":     "nats://10.0.0.7:4225",
		"http://localhost:8081":    "http://localhost:8081",
		"http://[fe80::1]:8081":    "http://[fe80::1]:8081",
		"http://admin.example.com": "http://admin.example.com",
		"%zz":                      "%zz",
	} {
		if got := Reachable(in); got != want {
			t.Errorf("Reachable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRecordReadForget reads back what was recorded, without the aside file, and nothing once it
// is forgotten.
func TestRecordReadForget(t *testing.T) {
	dir := t.TempDir()
	if got, err := Read(dir, Admin); got != "" || err != nil {
		t.Fatalf("before any record: %q, %v; want nothing", got, err)
	}
	for _, u := range []string{"http://127.0.0.1:8081", "http://127.0.0.1:9081"} {
		if err := Record(dir, Admin, u); err != nil {
			t.Fatal(err)
		}
		if got, err := Read(dir, Admin); got != u || err != nil {
			t.Errorf("read %q, %v; want %q", got, err, u)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, Admin+".tmp")); !os.IsNotExist(err) {
		t.Errorf("aside file left behind: %v", err)
	}
	Forget(dir, Admin)
	if got, err := Read(dir, Admin); got != "" || err != nil {
		t.Errorf("after Forget: %q, %v; want nothing", got, err)
	}
	if err := Record(filepath.Join(dir, "missing"), NATS, "nats://127.0.0.1:4222"); err == nil {
		t.Error("recorded into a directory that does not exist")
	}
}
