package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeapFloor is the heap goal below which serve does not let the collector's goal fall.
const DefaultHeapFloor = 64 << 20

// MaxHeapFloor is the largest --heap-floor-bytes taken: far above any machine's memory, and low
// enough that the percentages computed from it stay in range.
const MaxHeapFloor = 1 << 40

// processGCPercent is the collector's percentage as the runtime set it from GOGC when the process
// started, before a floor could change it: what a floor gives back when it stops.
var processGCPercent = gcPercentNow()

// heapFloor raises the garbage collector's percentage (GOGC) while the live heap is small, so that
// the heap goal, the size at which the next collection ends, is about floor bytes rather than twice
// what is live.
//
// With GOGC's 100 alone, a process holding 6 MiB live collects every 6 MiB allocated. A read node
// holding a few establishments, answering tens of thousands of requests a second that each
// allocate a few kilobytes inside net/http, then collects a dozen times a second, and each
// collection scans the stacks of the process's few hundred goroutines (NATS, the projector's
// workers, the webhook's): a tenth of the node's CPU. Once GOGC's own goal reaches the floor (a
// live heap of half of it at GOGC=100), the percentage is GOGC's own again, so a node at scale,
// whose mirror holds gigabytes, collects exactly as GOGC and GOMEMLIMIT say. GOMEMLIMIT bounds the
// heap whatever the percentage: a limit below the floor makes the limit the goal.
//
// The percentage is set again after each collection, from the heap it found live; until the first
// one, it is GOGC's. In the moment between a collection and that setting, the goal is the previous
// percentage's on the new live heap: while a heap grows fast (a mirror loading), that goal may pass
// the floor, by at most what the heap grew since the collection before.
type heapFloor struct {
	floor  uint64
	base   int // GOGC's percentage, restored by stop
	sample []metrics.Sample

	mu      sync.Mutex
	stopped bool
}

// startHeapFloor keeps the heap floor until the returned function is called, which restores base.
// It does nothing when floor is 0, or when base is 0 or less (GOGC=0 or off, settings of their
// own).
func startHeapFloor(floor uint64, base int) (stop func()) {
	if floor == 0 || base <= 0 {
		return func() {}
	}
	h := &heapFloor{floor: min(floor, MaxHeapFloor), base: base, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
		{Name: "/gc/gogc:percent"},
	}}
	h.arm()
	return h.stop
}

// arm calls adjust once the collector has found a new object unreachable, that is after the next
// collection, and arms again.
func (h *heapFloor) arm() {
	// 32 bytes: an object of 16 bytes or less without pointers may share a block with others and
	// live on after it is unreachable.
	runtime.AddCleanup(new([32]byte), func(h *heapFloor) {
		if h.adjust() {
			h.arm()
		}
	}, h)
}

// adjust sets the percentage for the heap the last collection found; it reports whether the
// floor is still kept.
func (h *heapFloor) adjust() bool {
	metrics.Read(h.sample)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	p := floorPercent(h.sample[0].Value.Uint64(), h.sample[1].Value.Uint64()+h.sample[2].Value.Uint64(), h.floor, h.base)
	// The runtime's percentage, not one remembered: another floor in the process may have set it.
	if int64(h.sample[3].Value.Uint64()) != int64(p) {
		debug.SetGCPercent(p)
	}
	return true
}

func (h *heapFloor) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.stopped = true
		debug.SetGCPercent(h.base)
	}
}

// runtimeHeapMinimum is the runtime's least heap goal at GOGC=100; it scales with the percentage.
const runtimeHeapMinimum = 4 << 20

// floorPercent returns the collector's percentage after a collection found live bytes of heap and
// roots bytes of stacks and globals: base, or more when base's goal would fall short of floor. The
// runtime's goal is live + (live + roots) × percentage / 100, and at least its minimum heap, which
// the percentage scales: the percentage is capped so that this minimum stays within the floor.
// Before the first collection (live is 0), it is base.
func floorPercent(live, roots, floor uint64, base int) int {
	floor = min(floor, MaxHeapFloor)
	scanned := live + roots
	if live == 0 || live >= floor || live+scanned*uint64(base)/100 >= floor {
		return base
	}
	p := ((floor-live)*100 + scanned - 1) / scanned // the least p whose goal reaches floor
	p = min(p, floor*100/runtimeHeapMinimum, math.MaxInt32)
	return max(int(p), base)
}

// gcPercentNow is the collector's percentage now.
func gcPercentNow() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
