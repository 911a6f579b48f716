package heapfloor

import (
	"math"
	"testing"
)

const mib = 1 << 20

// runtimeGoal is the runtime's heap goal after a collection found live bytes of heap and roots
// bytes of stacks and globals, at percentage p.
func runtimeGoal(live, roots uint64, p int) uint64 {
	return max(live+(live+roots)*uint64(p)/100, runtimeHeapMinimum*uint64(p)/100)
}

func TestFloorPercent(t *testing.T) {
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
		{"a floor past the largest", 1 * mib, 0, math.MaxUint64, 100, Max * 100 / runtimeHeapMinimum},
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
	goal := runtimeGoal
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
