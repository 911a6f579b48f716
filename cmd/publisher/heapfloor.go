package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// DefaultHeapFloor is the heap size below which serve does not let the garbage collector run.
const DefaultHeapFloor = 64 << 20

// heapFloor raises the garbage collector's percentage (GOGC) while the live heap is small, so that
// the heap may grow to at least floor bytes between two collections.
//
// With GOGC's 100 alone, a process holding 6 MiB live collects every 6 MiB allocated. A read node
// holding a few establishments, answering tens of thousands of requests a second that each
// allocate a few kilobytes inside net/http, then collects a dozen times a second, and each
// collection scans the stacks of the process's few hundred goroutines (NATS, the projector's
// workers, the webhook's): a tenth of the node's CPU. Once the live heap reaches half the floor,
// the percentage is GOGC's own again, so a node at scale, whose mirror holds gigabytes, collects
// exactly as GOGC and GOMEMLIMIT say. GOMEMLIMIT bounds the heap whatever the percentage.
//
// The percentage is set again after each collection, from the heap it found live.
type heapFloor struct {
	floor  uint64
	base   int // GOGC's percentage, restored by stop
	sample []metrics.Sample

	mu      sync.Mutex
	stopped bool
	set     int // the percentage in force
}

// startHeapFloor keeps the heap floor until the returned function is called, which restores
// base. It does nothing when floor is 0 or the collector is off (base < 0).
func startHeapFloor(floor uint64, base int) (stop func()) {
	if floor == 0 || base < 0 {
		return func() {}
	}
	h := &heapFloor{floor: floor, base: base, set: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.adjust()
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

// adjust sets the percentage for the heap found live by the last collection; it reports whether
// the floor is still kept.
func (h *heapFloor) adjust() bool {
	metrics.Read(h.sample)
	var live uint64
	if h.sample[0].Value.Kind() == metrics.KindUint64 {
		live = h.sample[0].Value.Uint64()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	if p := floorPercent(live, h.floor, h.base); p != h.set {
		debug.SetGCPercent(p)
		h.set = p
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

// floorPercent returns the collector's percentage for a live heap: base, or more when base would
// collect before the heap reaches floor. A heap not yet measured (0) is given the floor's
// percentage for 1 MiB live.
func floorPercent(live, floor uint64, base int) int {
	live = max(live, 1<<20)
	if live >= floor || live*uint64(100+base) >= floor*100 {
		return base
	}
	// The least p for which live × (100 + p) / 100 reaches floor.
	return int((floor*100 - live*100 + live - 1) / live)
}

// gogcPercent reads the GOGC environment variable as the runtime does at start: "off" is -1 (no
// collection but at GOMEMLIMIT), a number is itself, anything else 100. It is read from the
// environment rather than from the runtime, where a floor already running would have changed it.
func gogcPercent(gogc string) int {
	if gogc == "off" {
		return -1
	}
	if p, err := strconv.ParseInt(gogc, 10, 32); err == nil && !strings.HasPrefix(gogc, "+") {
		return max(int(p), -1)
	}
	return 100
}

// currentGCPercent is the collector's percentage now.
func currentGCPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
