// Package heapfloor keeps the garbage collector's heap goal at a floor while the live heap is
// small: it raises the collector's percentage (GOGC) after each collection that found less live
// than half the floor, and gives GOGC's own percentage back once the heap has grown past it or
// the floor is stopped. A process whose heap has settled into long-lived data may lower that
// percentage (Floor.Settle), the floor still kept below it.
//
// It imports the standard library only. Invariants: the percentage it sets is never below its
// base, GOGC's or the one settled (a floor only ever lets the heap grow more between collections);
// once stopped, it sets nothing again, not even from a collection's callback already armed; and
// it never touches the memory limit, so GOMEMLIMIT bounds the heap whatever the floor.
//
// What it reads from the runtime and sets in it goes through a gcRuntime, so that the controller
// is tested against readings of its own; one test checks the real collector, alone in a process
// of its own.
package heapfloor
