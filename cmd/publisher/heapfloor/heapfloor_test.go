package heapfloor

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRuntime is a collector whose collections the test makes: collect sets what the last one
// found and calls the callbacks armed before it.
type fakeRuntime struct {
	mu    sync.Mutex
	last  reading
	sets  []int    // every percentage set, in order
	armed []func() // called by the next collection
}

func (f *fakeRuntime) read() reading {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeRuntime) setGCPercent(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, p)
	f.last.percent = p
}

func (f *fakeRuntime) afterGC(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = append(f.armed, fn)
}

// collect ends a collection that found live bytes of heap and roots bytes of stacks and globals,
// and returns the goal the runtime then has.
func (f *fakeRuntime) collect(live, roots uint64) uint64 {
	f.mu.Lock()
	f.last.live, f.last.roots = live, roots
	armed := f.armed
	f.armed = nil
	f.mu.Unlock()
	for _, fn := range armed {
		fn()
	}
	r := f.read()
	return runtimeGoal(r.live, r.roots, r.percent)
}

func (f *fakeRuntime) state() (sets []int, armed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sets), len(f.armed)
}

// TestHeapFloorFollowsTheCollections runs the controller against collections of its own making,
// as TestHeapFloorHoldsTheGoal does against the real collector: 16 MiB live, then freed, then
// 48 MiB, then freed again; stopping gives the percentage back and sets nothing after.
func TestHeapFloorFollowsTheCollections(t *testing.T) {
	const floor = 64 * mib
	rt := &fakeRuntime{last: reading{percent: 100}}
	stop := start(rt, floor, 100).Stop
	if sets, armed := rt.state(); len(sets) != 0 || armed != 1 {
		t.Fatalf("at start: set %v, %d armed; want nothing set and one armed", sets, armed)
	}
	atFloor := func(what string, goal uint64) {
		t.Helper()
		if goal < floor || goal > floor+floor/8 {
			t.Fatalf("%s: goal %d (GOGC %d), want %d to %d", what, goal, rt.read().percent, floor, floor+floor/8)
		}
	}
	atFloor("the goal at the floor while 16 MiB are live", rt.collect(16*mib, 64<<10))
	atFloor("the goal at the floor once they are freed", rt.collect(256<<10, 64<<10))
	rt.collect(48*mib, 64<<10)
	if got := rt.read().percent; got != 100 {
		t.Fatalf("while 48 MiB are live: GOGC %d, want GOGC's own 100", got)
	}
	atFloor("the floor again once they are freed", rt.collect(1*mib, 64<<10))

	// A collection that finds the percentage already right sets nothing.
	before, _ := rt.state()
	atFloor("the same heap again", rt.collect(1*mib, 64<<10))
	if after, _ := rt.state(); len(after) != len(before) {
		t.Fatalf("the percentage already right: set %v, want nothing more after %v", after[len(before):], before)
	}

	rt.last.percent = 700 // another setting since; stop gives GOGC's back all the same
	stop()
	if got := rt.read().percent; got != 100 {
		t.Fatalf("after stop: GOGC %d, want 100", got)
	}
	stopped, _ := rt.state()
	for range 5 {
		rt.collect(1*mib, 0)
	}
	if sets, armed := rt.state(); len(sets) != len(stopped) || armed != 0 {
		t.Fatalf("collections after stop: set %v, %d armed; want nothing more after %v and none armed", sets, armed, stopped)
	}
	stop()
	if sets, _ := rt.state(); len(sets) != len(stopped) {
		t.Fatalf("a second stop: set %v, want nothing more after %v", sets, stopped)
	}
}

// TestSettleLowersThePercentageAboveTheFloor: once settled at 10, a large heap's goal is 10 %
// above what is live, from the settling on; a heap become small again keeps the floor; stopping
// gives the settled percentage back. Without a floor, or with GOGC off, settling sets the
// percentage directly, or nothing.
func TestSettleLowersThePercentageAboveTheFloor(t *testing.T) {
	const floor = 64 * mib
	rt := &fakeRuntime{last: reading{percent: 100, live: 1 << 30}}
	f := start(rt, floor, 100)
	rt.collect(1<<30, 1<<20)
	if got := rt.read().percent; got != 100 {
		t.Fatalf("before settling: GOGC %d, want 100", got)
	}
	f.Settle(10)
	if got := rt.read().percent; got != 10 {
		t.Fatalf("settled with 1 GiB live: GOGC %d, want 10 at once", got)
	}
	if goal := rt.collect(1<<30, 1<<20); goal > (1<<30)*111/100 {
		t.Fatalf("settled with 1 GiB live: goal %d, want at most 10 %% above it", goal)
	}
	if goal := rt.collect(1*mib, 64<<10); goal < floor {
		t.Fatalf("settled, 1 MiB live: goal %d, want the floor %d kept", goal, floor)
	}
	f.Stop()
	if got := rt.read().percent; got != 10 {
		t.Fatalf("after stop: GOGC %d, want the settled 10", got)
	}

	rt = &fakeRuntime{last: reading{percent: 100}}
	start(rt, 0, 100).Settle(10)
	start(rt, 1<<30, 100).Settle(0)
	start(rt, 1<<30, -1).Settle(10)
	if sets, _ := rt.state(); !slices.Equal(sets, []int{10}) {
		t.Fatalf("settled without a floor, at 0, and with GOGC off: set %v, want only [10]", sets)
	}
}

// aloneEnv, set to 1, makes a test that needs the whole process run its body: its parent runs
// it again in a process of its own.
const aloneEnv = "HEAPFLOOR_TEST_ALONE"

// runAlone runs t again in a process of its own, where nothing else allocates: the goal it checks
// is the whole process's.
func runAlone(t *testing.T) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), aloneEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a process of its own did not run:\n%s", t.Name(), out)
	}
}

// TestHeapFloorHoldsTheGoal runs a floor of 64 MiB in a process of its own across collections
// that find different heaps live: 16 MiB live when it starts, whose percentage would put the goal
// far below the floor once they are freed; then 48 MiB live, which need GOGC's own percentage.
// The goal is checked from both sides. Stopping gives the percentage back.
func TestHeapFloorHoldsTheGoal(t *testing.T) {
	if os.Getenv(aloneEnv) != "1" {
		runAlone(t)
		return
	}
	// The process's own settings, whatever GOGC and GOMEMLIMIT the tests run with, are put back.
	t.Cleanup(func() { debug.SetGCPercent(ProcessGCPercent()) })
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
	stop := Start(floor, 100).Stop
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
	t.Cleanup(func() { debug.SetGCPercent(ProcessGCPercent()) })
	debug.SetGCPercent(100)
	Start(0, 100).Stop()
	Start(1<<30, -1).Stop()
	Start(1<<30, 0).Stop()
	if got := gcPercentNow(); got != 100 {
		t.Fatalf("GOGC %d, want 100 untouched", got)
	}
	// Nor does it arm anything or set a percentage of its own.
	rt := &fakeRuntime{last: reading{percent: 100}}
	start(rt, 0, 100).Stop()
	start(rt, 1<<30, -1).Stop()
	start(rt, 1<<30, 0).Stop()
	if sets, armed := rt.state(); len(sets) != 0 || armed != 0 {
		t.Fatalf("set %v, %d armed; want nothing", sets, armed)
	}
}
