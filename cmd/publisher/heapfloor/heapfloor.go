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

// Floor is a heap floor Start keeps, and the percentage given back above it.
type Floor struct {
	rt   gcRuntime
	base int         // GOGC's percentage, as Start was given it
	c    *controller // nil when no floor is kept
}

// Start keeps the heap floor until Stop, which restores base, GOGC's percentage (see
// ProcessGCPercent). It keeps none when floor is 0, or when base is 0 or less (GOGC=0 or off,
// settings of their own). A floor above Max is Max.
func Start(floor uint64, base int) *Floor {
	return start(newRuntime(), floor, base)
}

func start(rt gcRuntime, floor uint64, base int) *Floor {
	f := &Floor{rt: rt, base: base}
	if floor == 0 || base <= 0 {
		return f
	}
	f.c = &controller{rt: rt, floor: min(floor, Max), base: base}
	f.c.arm()
	return f
}

// Stop stops keeping the floor and gives the percentage back: base, or the one Settle set.
func (f *Floor) Stop() {
	if f.c != nil {
		f.c.stop()
	}
}

// Settle makes p the percentage from now on, the floor still kept while the heap is small: for
// a process whose heap has become long-lived data that changes little (a read node once its
// mirror is loaded), a small percentage keeps the heap near what is live at little cost. It does
// nothing when p is 0 or less, or when Start was given no percentage of GOGC's (0 or off).
func (f *Floor) Settle(p int) {
	if p <= 0 || f.base <= 0 {
		return
	}
	if f.c == nil {
		f.rt.setGCPercent(p)
		return
	}
	f.c.settle(p)
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

// settle makes p the base percentage and sets the one it gives now.
func (c *controller) settle(p int) {
	r := c.rt.read()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.base = p
	if q := floorPercent(r.live, r.roots, c.floor, c.base); r.percent != q {
		c.rt.setGCPercent(q)
	}
}

func (c *controller) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.stopped = true
		c.rt.setGCPercent(c.base)
	}
}
