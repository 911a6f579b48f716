package main

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryRatio is the share of the memory a process may use that serve makes its soft limit.
const memoryRatio = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit when the operator gave none in
// GOMEMLIMIT, as operators expect of a Go service: 90 % of the memory limit of the process's
// container as container reports it (memlimit.FromCgroup), or outside a container, or in one
// without a limit, of the machine's memory as machine reports it (memlimit.FromSystem). The
// collector then works harder as the process nears what it may use, rather than the process
// being killed for it. AUTOMEMLIMIT sets another ratio, in (0, 1], or "off" for none. It logs the
// limit taken, once.
func setMemoryLimit(logger *slog.Logger, container, machine memlimit.Provider) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		logger.Info("memory limit from GOMEMLIMIT", "gomemlimit", v)
		return
	}
	from := "container"
	provider := memlimit.ApplyFallback(container, func() (uint64, error) {
		from = "machine"
		return machine()
	})
	limit, err := memlimit.Set(memlimit.WithProvider(provider), memlimit.WithRatio(memoryRatio))
	switch {
	case err != nil:
		logger.Warn("no memory limit: set GOMEMLIMIT", "err", err)
	case limit == math.MaxInt64:
		logger.Info("no memory limit found: set GOMEMLIMIT", "from", from)
	default:
		logger.Info("memory limit", "soft_limit_bytes", limit, "ratio", memoryRatio, "from", from)
	}
}

// readNodeGCPercent is the collector's percentage of a process running the api role alone once
// its mirror is loaded, unless GOGC sets one: its heap is then nearly all the mirror, long-lived
// and changed only as bundles are, and a read allocates next to nothing, so collections are rare
// even with the heap kept within a tenth of what is live.
const readNodeGCPercent = 10

// settleReadNode keeps the heap of a process running the api role alone within readNodeGCPercent
// of what is live once its mirror is loaded, and returns to the system what the load left behind
// (the bundles as they came from NATS, copied into the mirror's arrays): one collection.
func (m *Main) settleReadNode() {
	if m.heap == nil || !slices.Equal(m.Config.Roles, []string{roleAPI}) {
		return
	}
	m.heap.Settle(readNodeGCPercent)
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := m.Mirror.Stats()
	m.Logger.Info("read node: the collector keeps the heap within a tenth of what is live", "role", roleAPI,
		"gc_percent", readNodeGCPercent, "heap_bytes", ms.HeapAlloc, "document_bytes", st.DocumentBytes, "held_bytes", st.HeldBytes)
}
