package supervise

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Degradation is one degraded part of the process.
type Degradation struct {
	Since    time.Time `json:"since"`    // its first failure in a row
	Err      string    `json:"error"`    // its last failure
	Failures int       `json:"failures"` // in a row
}

// Fail records that part failed with err.
func (g *Group) Fail(part string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.degraded == nil {
		g.degraded = make(map[string]Degradation)
	}
	d, ok := g.degraded[part]
	if !ok {
		d.Since = time.Now().UTC()
	}
	d.Err, d.Failures = err.Error(), d.Failures+1
	g.degraded[part] = d
}

// Recovered records that part works again.
func (g *Group) Recovered(part string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.degraded, part)
}

// Degraded returns one line per degraded part, sorted: "part (since ..., n failures in a row)";
// empty when nothing is. It is what /readyz, which needs no credential, says: the errors
// themselves, which name streams, hosts and processes, are for the admin status.
func (g *Group) Degraded() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.degraded))
	for part, d := range g.degraded {
		out = append(out, fmt.Sprintf("%s (since %s, %d failures in a row)", part, d.Since.Format(time.RFC3339), d.Failures))
	}
	slices.Sort(out)
	return out
}

// Snapshot returns the degraded parts by name, with their errors.
func (g *Group) Snapshot() map[string]Degradation {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.degraded)
}
