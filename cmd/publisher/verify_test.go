package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestVerifyTheUntouchedDemo runs `serve --demo`, which uploads files, on any free ports, then
// verify with only --data-dir: it reaches the embedded NATS at the address the data directory
// records, compares under the files URL the projector stored, and finds no difference. --http
// and --public-url stating that URL are accepted; stating another is refused, naming both.
func TestVerifyTheUntouchedDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	out := &syncBuffer{}
	done := make(chan error, 1)
	args := []string{"serve", "--demo", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0"}
	go func() { done <- run(ctx, args, out, io.Discard, noEnv) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var base string
	eventually(t, "the demo printed its URLs", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "curl" && strings.Contains(f[2], "/files/sha256-") {
				base, _, _ = strings.Cut(f[2], "/files/")
			}
		}
		return base != ""
	})

	verify := func(flags ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, append([]string{"verify", "--data-dir", dir}, flags...), &stdout, &stderr, noEnv)
		return stdout.String(), stderr.String(), err
	}
	report, summary, err := verify()
	if err != nil || !strings.Contains(report, `"checked": 1`) || !strings.Contains(report, `"different": 0`) {
		t.Fatalf("verify --data-dir: got %v\n%s%s", err, report, summary)
	}
	if !strings.Contains(summary, "uploaded files under "+base+"\n") {
		t.Errorf("verify --data-dir: stderr %q, want the files URL %s", summary, base)
	}
	for _, flags := range [][]string{
		{"--public-url", base + "/"},
		{"--http", strings.TrimPrefix(base, "http://")},
	} {
		if report, _, err := verify(flags...); err != nil || !strings.Contains(report, `"different": 0`) {
			t.Errorf("verify %s: got %v\n%s", flags, err, report)
		}
	}
	for flags, stated := range map[string]string{
		"--public-url https://menus.example.com": "https://menus.example.com",
		"--http 127.0.0.1:1":                     "http://127.0.0.1:1",
	} {
		report, _, err := verify(strings.Fields(flags)...)
		if err == nil || !strings.Contains(err.Error(), flags+": the projector renders uploaded files under "+base+", not "+stated+":") {
			t.Errorf("verify %s: got %v, want a refusal naming %s and %s", flags, err, base, stated)
		}
		if report != "" {
			t.Errorf("verify %s: got a report %s, want none", flags, report)
		}
	}
}
