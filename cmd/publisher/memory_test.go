package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/opencarte/publisher/cmd/publisher/heapfloor"
	"github.com/opencarte/publisher/events/natstest"
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

// TestReadNodeSettlesItsHeap: a process running the api role alone, GOGC left to it, keeps its
// heap within a tenth of what is live once its mirror is loaded; one whose GOGC is set, or that
// runs other roles, keeps the collector's percentage.
func TestReadNodeSettlesItsHeap(t *testing.T) {
	t.Cleanup(func() { debug.SetGCPercent(heapfloor.ProcessGCPercent()) })
	srv := natstest.Start(t)
	external := func(c *Config) { c.NATSURL = srv.ClientURL() }
	for _, tc := range []struct {
		name      string
		roles     []string
		gogcUnset bool
		want      int
	}{
		{"api alone", []string{roleAPI}, true, readNodeGCPercent},
		{"api alone, GOGC set", []string{roleAPI}, false, 100},
		{"every role", nil, true, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			m := testMain(t.TempDir(), "2026-11-22", external, func(c *Config) { c.Roles = tc.roles })
			if tc.gogcUnset {
				m.heap = heapfloor.Start(0, 100)
			}
			startMain(t, m)
			if got := gcPercent(); got != tc.want {
				t.Errorf("GOGC %d once the mirror is loaded, want %d", got, tc.want)
			}
		})
	}
}

// gcPercent is the collector's percentage now.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
