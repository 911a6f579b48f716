package telemetry

import "runtime/metrics"

// memoryMetrics are the runtime/metrics Memory reports, by the name it gives them.
var memoryMetrics = []struct{ name, metric string }{
	{"heap_live_bytes", "/gc/heap/live:bytes"},
	{"heap_goal_bytes", "/gc/heap/goal:bytes"},
	{"go_total_bytes", "/memory/classes/total:bytes"},
	{"go_released_bytes", "/memory/classes/heap/released:bytes"},
	{"gc_cycles", "/gc/cycles/total:gc-cycles"},
}

// Memory describes the process's memory as the Go runtime sees it: the heap's live bytes after
// the last collection and its goal, and every byte mapped by the runtime (the embedded NATS
// server's included), some of which it has released to the system.
func Memory() map[string]uint64 {
	samples := make([]metrics.Sample, len(memoryMetrics))
	for i, m := range memoryMetrics {
		samples[i].Name = m.metric
	}
	metrics.Read(samples)
	out := make(map[string]uint64, len(samples))
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			out[memoryMetrics[i].name] = s.Value.Uint64()
		}
	}
	return out
}
