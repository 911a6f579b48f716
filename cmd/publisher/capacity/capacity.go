package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Reading is what the storage holds at one moment. A zero Limit or VolumeSize is not known.
type Reading struct {
	// Used is the bytes JetStream stores, Limit the most it stores.
	Used, Limit uint64
	// VolumeFree is the free space of the volume the store is on, VolumeSize its size.
	VolumeFree, VolumeSize uint64
	// Broken names the stores that stopped writing after a write failed (the volume ran out),
	// with why: nothing is written to them until they are opened again.
	Broken []string
}

// Config is what a Guard needs.
type Config struct {
	// Read takes a reading. Required.
	Read func(ctx context.Context) (Reading, error)
	// Reserve is the room kept for the service's own writes. 0 is DefaultReserve of the first
	// reading.
	Reserve uint64
	// Every is how often a reading is taken; 0 is a second.
	Every time.Duration
	// Fresh, when positive, has Full take a reading of its own when the last one is older: a
	// burst of large writes cannot then run past the reserve between two readings. For cheap
	// readings only (the embedded server's, read in the process).
	Fresh time.Duration
	// Logger hears when writes start and stop being refused. Required.
	Logger *slog.Logger
	// OnChange, optional, hears each change of the decision: between full and not full, or of
	// what is short.
	OnChange func(full bool, reason string)
	// Maintain, optional, is called with each periodic reading and the reserve, to act on it:
	// raise a store's limit to a volume that grew, open again the stores that stopped writing
	// once the volume has room. Its error is logged.
	Maintain func(ctx context.Context, r Reading, reserve uint64) error
}

// ErrNoVolume is Volume's answer on a system that does not tell the free space of a volume.
var ErrNoVolume = errors.New("capacity: the free space of a volume is not known on this system")

// Bounds of DefaultReserve.
const (
	minReserve = 8 << 20
	maxReserve = 1 << 30
)

// DefaultReserve is the reserve kept when none is configured: 5 % of the room the service has
// (the volume's size, or JetStream's limit when it is smaller), at least 8 MiB and at most 1 GiB.
func DefaultReserve(r Reading) uint64 {
	room := r.VolumeSize
	if r.Limit > 0 && (room == 0 || r.Limit < room) {
		room = r.Limit
	}
	return min(max(room/20, minReserve), maxReserve)
}

// Guard refuses writes while the storage is short. Its zero value is not usable; see New.
type Guard struct {
	cfg Config

	// checking is held through a reading and its decision, OnChange included, so that decisions
	// are heard in the order of their readings.
	checking sync.Mutex

	mu      sync.Mutex
	readAt  time.Time // of the last reading that succeeded
	reading Reading
	reserve uint64
	short   int // what is short, nothingShort when nothing
	full    bool
	reason  string
	err     error // of the last reading, nil when it succeeded
}

// New returns a guard that takes its first reading before it returns, so that a service started
// on a full volume refuses writes from its first request.
func New(ctx context.Context, cfg Config) (*Guard, error) {
	if cfg.Read == nil || cfg.Logger == nil {
		return nil, fmt.Errorf("capacity: config needs a reading and a logger")
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	g := &Guard{cfg: cfg, reserve: cfg.Reserve}
	_, _ = g.check(ctx)
	return g, nil
}

// Run takes a reading every Config.Every until ctx ends.
func (g *Guard) Run(ctx context.Context) error {
	t := time.NewTicker(g.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		r, ok := g.check(ctx)
		if ok && g.cfg.Maintain != nil {
			if err := g.cfg.Maintain(ctx, r, g.Status().Reserve); err != nil {
				g.cfg.Logger.Warn("storage: maintenance failed", "err", err)
			}
		}
	}
}

// check takes a reading and decides, and returns the reading. A reading that fails leaves the
// decision as it was.
func (g *Guard) check(ctx context.Context) (Reading, bool) {
	g.checking.Lock()
	defer g.checking.Unlock()
	rctx, cancel := context.WithTimeout(ctx, g.cfg.Every)
	r, err := g.cfg.Read(rctx)
	cancel()
	g.mu.Lock()
	g.err = err
	if err != nil {
		g.mu.Unlock()
		return r, false
	}
	// The default follows the room: a volume that grew keeps a larger reserve.
	if g.reserve = g.cfg.Reserve; g.reserve == 0 {
		g.reserve = DefaultReserve(r)
	}
	g.reading, g.readAt = r, time.Now()
	short, reason := decide(r, g.reserve)
	full := short != nothingShort
	// The words of a reason change with every byte: a change of what is short is news.
	changed := short != g.short
	g.short, g.full, g.reason = short, full, reason
	g.mu.Unlock()
	if !changed {
		return r, true
	}
	if full {
		g.cfg.Logger.Error("storage short: writes refused until room is made", "reason", reason)
	} else {
		g.cfg.Logger.Info("storage has room again: writes accepted", "volume_free", r.VolumeFree, "used", r.Used, "limit", r.Limit)
	}
	if g.cfg.OnChange != nil {
		g.cfg.OnChange(full, reason)
	}
	return r, true
}

// What can be short.
const (
	nothingShort = iota
	storesBroken
	volumeShort
	limitShort
)

// decide says what of r leaves less than reserve, if anything, and why in words.
func decide(r Reading, reserve uint64) (int, string) {
	if len(r.Broken) > 0 {
		return storesBroken, fmt.Sprintf("the store stopped writing after the volume ran out (%s): it is opened again once the volume has %s free",
			strings.Join(r.Broken, "; "), Bytes(reserve))
	}
	if r.VolumeSize > 0 && r.VolumeFree < reserve {
		return volumeShort, fmt.Sprintf("the data volume has %s free of %s, less than the %s kept for the service's own writes: free space on it or grow it",
			Bytes(r.VolumeFree), Bytes(r.VolumeSize), Bytes(reserve))
	}
	if r.Limit > 0 && r.Used+reserve > r.Limit {
		return limitShort, fmt.Sprintf("the event store holds %s of its limit of %s, leaving less than the %s kept for the service's own writes: raise the limit or free space in it",
			Bytes(r.Used), Bytes(r.Limit), Bytes(reserve))
	}
	return nothingShort, ""
}

// Full says whether writes are refused, and why.
func (g *Guard) Full() (reason string, full bool) {
	if g.cfg.Fresh > 0 {
		g.mu.Lock()
		stale := time.Since(g.readAt) > g.cfg.Fresh
		g.mu.Unlock()
		// A reading under way, by Run or another write, is as fresh: not waited for.
		if stale && g.checking.TryLock() {
			g.checking.Unlock()
			_, _ = g.check(context.Background())
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason, g.full
}

// Status is the guard's last reading and decision.
type Status struct {
	Reading
	Reserve uint64
	Full    bool
	Reason  string
	Err     error // of the last reading
}

// Status returns the last reading and decision.
func (g *Guard) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Status{Reading: g.reading, Reserve: g.reserve, Full: g.full, Reason: g.reason, Err: g.err}
}

// Bytes writes n in binary units, to one decimal: "7.5 MiB".
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
