package capacity

// The process's file descriptors: the listeners share what is left once a reserve is kept for
// the process itself (its NATS connections and store, the files it serves, webhook deliveries), so
// that a flood of connections never keeps it from working.
const (
	minReserveFDs = 256
	maxReserveFDs = 4096
	// The admin API and the metrics listener get their own small shares, so that a flood of the
	// read API leaves the operator a way in.
	adminConns   = 1024
	metricsConns = 64
	// maxAPIConns caps the read API's share whatever the open file limit: each connection costs
	// its goroutine and buffers, some 20 KiB, and a flood from many addresses must not make the
	// process run out of memory instead (16,384 connections: about 320 MiB).
	maxAPIConns = 16384
	// DefaultConnsPerClient is how many connections one client address may hold on a listener.
	DefaultConnsPerClient = 256
)

// Listener is a kind of listener of the process; the kinds' shares of the descriptors differ.
type Listener int

// The listener kinds.
const (
	ListenerAPI Listener = iota
	ListenerAdmin
	ListenerMetrics
)

// Budget is how many connections each listener may hold, from the process's limit of open
// files: a reserve (a quarter, from minReserveFDs to maxReserveFDs) for the process itself, half
// of which at most for the files the read API keeps open, then a share for the admin API and the
// metrics, and the rest for the read API, at most maxAPIConns.
type Budget struct {
	FDLimit, Reserve    int
	API, Admin, Metrics int
	PerClient           int
	// Files is what of the reserve the files the read API serves may hold, half of it at most.
	Files int
}

// NewBudget shares fdLimit, the process's limit of open files. total, when positive, sets the
// read API's share within what the limit leaves (--max-connections); perClient is what one client
// address may hold, DefaultConnsPerClient when not positive; maxFiles is the most the files the
// read API serves ever hold.
func NewBudget(fdLimit uint64, total, perClient, maxFiles int) Budget {
	limit := int(min(fdLimit, 1<<30))
	b := Budget{FDLimit: limit, PerClient: perClient}
	b.Reserve = min(max(limit/4, minReserveFDs), maxReserveFDs)
	b.Files = min(maxFiles, b.Reserve/2)
	avail := max(limit-b.Reserve, 16)
	b.Admin = max(min(adminConns, avail/8), 2)
	b.Metrics = max(min(metricsConns, avail/16), 1)
	b.API = max(avail-b.Admin-b.Metrics, 4)
	if total > 0 {
		b.API = min(b.API, total)
	} else {
		b.API = min(b.API, maxAPIConns)
	}
	if b.PerClient <= 0 {
		b.PerClient = DefaultConnsPerClient
	}
	return b
}

// Share is how many connections a listener of kind l may hold.
func (b Budget) Share(l Listener) int {
	switch l {
	case ListenerAdmin:
		return b.Admin
	case ListenerMetrics:
		return b.Metrics
	}
	return b.API
}
