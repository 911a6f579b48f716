package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// withoutGOMEMLIMIT runs the test as a process started without GOMEMLIMIT and gives the runtime
// its memory limit back afterwards.
func withoutGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // restored after the test
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AUTOMEMLIMIT", "")
	if err := os.Unsetenv("AUTOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

func TestMemoryLimit(t *testing.T) {
	const gib = 1 << 30
	noCgroup := func() (uint64, error) { return 0, memlimit.ErrNoCgroup }
	for _, tc := range []struct {
		name               string
		container, machine memlimit.Provider
		gomemlimit         string // set in the environment when not empty
		want               int64  // 0: the limit stays as it was
		log                string
	}{
		{"container", memlimit.Limit(10 * gib), memlimit.Limit(64 * gib), "", 9 * gib, "from=container"},
		{"machine", noCgroup, memlimit.Limit(20 * gib), "", 18 * gib, "from=machine"},
		{"container without a limit", func() (uint64, error) { return 0, memlimit.ErrNoLimit }, memlimit.Limit(20 * gib), "", 18 * gib, "from=machine"},
		{"operator's own", memlimit.Limit(10 * gib), memlimit.Limit(64 * gib), "3GiB", 0, "gomemlimit=3GiB"},
		{"nothing known", noCgroup, func() (uint64, error) { return 0, errors.New("no meminfo") }, "", 0, "no memory limit: set GOMEMLIMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withoutGOMEMLIMIT(t)
			if tc.gomemlimit != "" {
				t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			}
			before := debug.SetMemoryLimit(-1)
			var log bytes.Buffer
			setMemoryLimit(slog.New(slog.NewTextHandler(&log, nil)), tc.container, tc.machine)
			want := tc.want
			if want == 0 {
				want = before
			}
			if got := debug.SetMemoryLimit(-1); got != want {
				t.Errorf("memory limit %d, want %d", got, want)
			}
			if !strings.Contains(log.String(), tc.log) || strings.Count(log.String(), "\n") != 1 {
				t.Errorf("log %q: want one line with %q", log.String(), tc.log)
			}
		})
	}
}
