package heapfloor

import "sync"

// Default is the heap goal below which serve does not let the collector's goal fall.
const Default = 64 << 20

// Max is the largest floor taken: far above any machine's memory, and low enough that the
// percentages computed from it stay in range.
const Max = 1 << 40

// processGCPercent is the collector's percentage as the runtime set it from GOGC when the process
// started, before a floor could change it: what a floor gives back when it stops.
var processGCPercent = gcPercentNow()

// ProcessGCPercent returns the collector's percentage as GOGC set it when the process started,
// before any floor changed it.
func ProcessGCPercent() int { return processGCPercent }

// controller raises the garbage collector's percentage (GOGC) while the live heap is small, so that
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
type controller struct {
	rt    gcRuntime
	floor uint64
	base  int // GOGC's percentage, restored by stop

	mu      sync.Mutex
	stopped bool
}

// Start keeps the heap floor until the returned function is called, which restores base, GOGC's
// percentage (see ProcessGCPercent). It does nothing when floor is 0, or when base is 0 or less
// (GOGC=0 or off, settings of their own). A floor above Max is Max.
func Start(floor uint64, base int) (stop func()) {
	return start(newRuntime(), floor, base)
}

func start(rt gcRuntime, floor uint64, base int) (stop func()) {
	if floor == 0 || base <= 0 {
		return func() {}
	}
	c := &controller{rt: rt, floor: min(floor, Max), base: base}
	c.arm()
	return c.stop
}

// arm calls adjust once the next collection has ended, and arms again while the floor is kept.
func (c *controller) arm() {
	c.rt.afterGC(func() {
		if c.adjust() {
			c.arm()
		}
	})
}

// adjust sets the percentage for the heap the last collection found; it reports whether the
// floor is still kept.
func (c *controller) adjust() bool {
	r := c.rt.read()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	p := floorPercent(r.live, r.roots, c.floor, c.base)
	// The runtime's percentage, not one remembered: another floor in the process may have set it.
	if r.percent != p {
		c.rt.setGCPercent(p)
	}
	return true
}

func (c *controller) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.stopped = true
		c.rt.setGCPercent(c.base)
	}
}
