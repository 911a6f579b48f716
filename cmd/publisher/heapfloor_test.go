package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		live, floor uint64
		base, want  int
	}{
		{"small heap", 6 * mib, 64 * mib, 100, 967},
		{"half the floor", 32 * mib, 64 * mib, 100, 100},
		{"above half the floor", 40 * mib, 64 * mib, 100, 100},
		{"above the floor", 3 << 30, 64 * mib, 100, 100},
		{"lower GOGC", 40 * mib, 64 * mib, 50, 60},
		{"higher GOGC", 10 * mib, 64 * mib, 800, 800},
		{"not yet measured", 0, 64 * mib, 100, 6300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := floorPercent(tc.live, tc.floor, tc.base)
			if got != tc.want {
				t.Fatalf("floorPercent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
			}
			live := max(tc.live, mib)
			if got > tc.base && (live*uint64(100+got) < tc.floor*100 || live*uint64(100+got-1) >= tc.floor*100) {
				t.Errorf("%d is not the least percentage whose goal reaches the floor", got)
			}
		})
	}
}

// TestHeapFloorHoldsTheGoal runs the floor in this process, across collections that find
// different heaps live: it starts while 256 MiB are live, whose percentage would put the goal far
// below the floor once they are freed; then 512 MiB live again need GOGC's own percentage. Stopping
// gives GOGC back.
func TestHeapFloorHoldsTheGoal(t *testing.T) {
	base := currentGCPercent()
	if base != 100 {
		t.Fatalf("the tests run with GOGC=%d; this test assumes 100", base)
	}
	const floor = 1 << 30
	held := make([]byte, 256<<20)
	runtime.GC()
	stop := startHeapFloor(floor, base)
	defer stop()
	runtime.KeepAlive(held)
	held = nil

	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// until collects until cond holds; the percentage is set by a cleanup, on a goroutine of its
	// own, after each collection. Before the first collection, each cond is false: the percentage
	// then is the one set for the heap the step before.
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runtime.GC(); !cond(); runtime.GC() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10 s of collections (goal %d, GOGC %d)", what, goal(), currentGCPercent())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	until("the heap goal at the floor once 256 MiB are freed", func() bool { return goal() >= floor })
	held = make([]byte, 512<<20)
	until("GOGC's own percentage while 512 MiB are live", func() bool { return currentGCPercent() == base })
	runtime.KeepAlive(held)
	held = nil
	until("the floor again once they are freed", func() bool { return goal() >= floor })

	stop()
	if got := currentGCPercent(); got != base {
		t.Fatalf("after stop: GOGC %d, want %d", got, base)
	}
	runtime.GC()
	if got := currentGCPercent(); got != base {
		t.Fatalf("a collection after stop: GOGC %d, want %d", got, base)
	}
}

func TestGOGCPercent(t *testing.T) {
	for gogc, want := range map[string]int{"": 100, "100": 100, "50": 50, "off": -1, "-5": -1, "x": 100, "1e3": 100, "+5": 100} {
		if got := gogcPercent(gogc); got != want {
			t.Errorf("gogcPercent(%q) = %d, want %d", gogc, got, want)
		}
	}
}

func TestHeapFloorOff(t *testing.T) {
	base := currentGCPercent()
	startHeapFloor(0, base)()
	startHeapFloor(1<<30, -1)()
	if got := currentGCPercent(); got != base {
		t.Fatalf("GOGC %d, want %d untouched", got, base)
	}
}
