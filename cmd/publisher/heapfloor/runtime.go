package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// reading is what the collector found in its last collection, and its percentage now.
type reading struct {
	live    uint64 // bytes of heap found live
	roots   uint64 // bytes of stacks and globals scanned
	percent int
}

// gcRuntime is the collector a floor reads and sets.
type gcRuntime interface {
	read() reading
	setGCPercent(p int)
	// afterGC calls fn, on a goroutine of the runtime's, once a collection has ended.
	afterGC(fn func())
}

// goRuntime is this process's collector. Its samples are read by one controller's callbacks,
// which run one after the other.
type goRuntime struct {
	sample []metrics.Sample
}

func newRuntime() *goRuntime {
	return &goRuntime{sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
		{Name: "/gc/gogc:percent"},
	}}
}

func (g *goRuntime) read() reading {
	metrics.Read(g.sample)
	return reading{
		live:    g.sample[0].Value.Uint64(),
		roots:   g.sample[1].Value.Uint64() + g.sample[2].Value.Uint64(),
		percent: int(int64(g.sample[3].Value.Uint64())),
	}
}

func (*goRuntime) setGCPercent(p int) { debug.SetGCPercent(p) }

// afterGC calls fn once the collector has found a new object unreachable, that is after the next
// collection.
func (*goRuntime) afterGC(fn func()) {
	// 32 bytes: an object of 16 bytes or less without pointers may share a block with others and
	// live on after it is unreachable.
	runtime.AddCleanup(new([32]byte), func(fn func()) { fn() }, fn)
}

// gcPercentNow is the collector's percentage now.
func gcPercentNow() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
