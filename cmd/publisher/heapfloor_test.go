package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name               string
		live, roots, floor uint64
		base, want         int
	}{
		{"small heap", 6 * mib, 0, 64 * mib, 100, 967},
		{"small heap and its roots", 6 * mib, 2 * mib, 64 * mib, 100, 725},
		{"half the floor", 32 * mib, 0, 64 * mib, 100, 100},
		{"above half the floor", 40 * mib, 0, 64 * mib, 100, 100},
		{"roots make up the rest", 30 * mib, 4 * mib, 64 * mib, 100, 100},
		{"above the floor", 3 << 30, 0, 64 * mib, 100, 100},
		{"lower GOGC", 40 * mib, 0, 64 * mib, 50, 60},
		{"higher GOGC", 10 * mib, 0, 64 * mib, 800, 800},
		{"the minimum heap kept within the floor", 1 * mib, 0, 64 * mib, 100, 1600},
		{"not yet measured", 0, 0, 64 * mib, 100, 100},
		{"a floor past the largest", 1 * mib, 0, math.MaxUint64, 100, MaxHeapFloor * 100 / runtimeHeapMinimum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := floorPercent(tc.live, tc.roots, tc.floor, tc.base)
			if got != tc.want {
				t.Fatalf("floorPercent(%d, %d, %d, %d) = %d, want %d", tc.live, tc.roots, tc.floor, tc.base, got, tc.want)
			}
		})
	}
}

// TestFloorPercentReachesTheFloor checks the percentage against the runtime's goal formula: the
// least whose goal reaches the floor, unless its minimum heap would pass it.
func TestFloorPercentReachesTheFloor(t *testing.T) {
	const floor = 64 << 20
	goal := func(live, roots uint64, p int) uint64 {
		return max(live+(live+roots)*uint64(p)/100, runtimeHeapMinimum*uint64(p)/100)
	}
	for live := uint64(1 << 20); live < floor; live += 1 << 19 {
		for _, roots := range []uint64{0, 1 << 18, 3 << 20} {
			p := floorPercent(live, roots, floor, 100)
			switch {
			case p > 100 && goal(live, roots, p) > floor+floor/100:
				t.Fatalf("live %d, roots %d: percentage %d, goal %d past the floor", live, roots, p, goal(live, roots, p))
			case p > 100 && goal(live, roots, p-1) >= floor:
				t.Fatalf("live %d, roots %d: percentage %d is not the least", live, roots, p)
			case p < floor*100/runtimeHeapMinimum && goal(live, roots, p) < floor:
				t.Fatalf("live %d, roots %d: percentage %d, goal %d short of the floor", live, roots, p, goal(live, roots, p))
			}
		}
	}
}

// TestHeapFloorHoldsTheGoal runs a floor of 64 MiB in this process across collections that find
// different heaps live: 16 MiB live when it starts, whose percentage would put the goal far below
// the floor once they are freed; then 48 MiB live, which need GOGC's own percentage. The goal is
// checked from both sides. Stopping gives the percentage back.
func TestHeapFloorHoldsTheGoal(t *testing.T) {
	// The process's own settings, whatever GOGC and GOMEMLIMIT the tests run with, are put back.
	t.Cleanup(func() { debug.SetGCPercent(processGCPercent) })
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) })
	debug.SetGCPercent(100)

	const floor = 64 << 20
	read := func(name string) uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	goal := func() uint64 { return read("/gc/heap/goal:bytes") }
	// until collects until cond holds; the percentage is set by a cleanup, on a goroutine of its
	// own, after each collection. Before the first collection, each cond is false: the percentage
	// then is the one set for the heap the step before.
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runtime.GC(); !cond(); runtime.GC() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10 s of collections (goal %d, GOGC %d)", what, goal(), gcPercentNow())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	atFloor := func() bool { g := goal(); return g >= floor && g <= floor+floor/8 }

	held := make([]byte, 16<<20)
	runtime.GC()
	stop := startHeapFloor(floor, 100)
	defer stop()
	until("the goal at the floor while 16 MiB are live", atFloor)
	runtime.KeepAlive(held)
	held = nil
	until("the goal at the floor once they are freed", atFloor)
	held = make([]byte, 48<<20)
	until("GOGC's own percentage while 48 MiB are live", func() bool { return gcPercentNow() == 100 })
	runtime.KeepAlive(held)
	held = nil
	until("the floor again once they are freed", atFloor)

	stop()
	if got := gcPercentNow(); got != 100 {
		t.Fatalf("after stop: GOGC %d, want 100", got)
	}
	// The cleanup armed before stop runs after a later collection, on its goroutine, and sets
	// nothing.
	for range 5 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if got := gcPercentNow(); got != 100 {
			t.Fatalf("a collection after stop: GOGC %d, want 100", got)
		}
	}
}

func TestHeapFloorOff(t *testing.T) {
	t.Cleanup(func() { debug.SetGCPercent(processGCPercent) })
	debug.SetGCPercent(100)
	startHeapFloor(0, 100)()
	startHeapFloor(1<<30, -1)()
	startHeapFloor(1<<30, 0)()
	if got := gcPercentNow(); got != 100 {
		t.Fatalf("GOGC %d, want 100 untouched", got)
	}
}
