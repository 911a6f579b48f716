package heapfloor

import "math"

// runtimeHeapMinimum is the runtime's least heap goal at GOGC=100; it scales with the percentage.
const runtimeHeapMinimum = 4 << 20

// floorPercent returns the collector's percentage after a collection found live bytes of heap and
// roots bytes of stacks and globals: base, or more when base's goal would fall short of floor. The
// runtime's goal is live + (live + roots) × percentage / 100, and at least its minimum heap, which
// the percentage scales: the percentage is capped so that this minimum stays within the floor.
// Before the first collection (live is 0), it is base.
func floorPercent(live, roots, floor uint64, base int) int {
	floor = min(floor, Max)
	scanned := live + roots
	if live == 0 || live >= floor || live+scanned*uint64(base)/100 >= floor {
		return base
	}
	p := ((floor-live)*100 + scanned - 1) / scanned // the least p whose goal reaches floor
	p = min(p, floor*100/runtimeHeapMinimum, math.MaxInt32)
	return max(int(p), base)
}
