package capacity

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

const mib = 1 << 20

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		r        Reading
		reserve  uint64
		full     bool
		mentions string
	}{
		{"room everywhere", Reading{Used: 10 * mib, Limit: 100 * mib, VolumeFree: 50 * mib, VolumeSize: 200 * mib}, 8 * mib, false, ""},
		{"volume at the reserve", Reading{VolumeFree: 8 * mib, VolumeSize: 64 * mib}, 8 * mib, false, ""},
		{"volume below the reserve", Reading{VolumeFree: 8*mib - 1, VolumeSize: 64 * mib}, 8 * mib, true, "data volume has 8.0 MiB free of 64.0 MiB"},
		{"limit reached but for the reserve", Reading{Used: 92 * mib, Limit: 100 * mib}, 8 * mib, false, ""},
		{"limit within the reserve", Reading{Used: 92*mib + 1, Limit: 100 * mib}, 8 * mib, true, "event store holds 92.0 MiB of its limit of 100.0 MiB"},
		{"nothing known", Reading{Used: 1 << 40}, 8 * mib, false, ""},
		{"stores broken, the volume with room", Reading{VolumeFree: 50 * mib, VolumeSize: 64 * mib, Broken: []string{"KV_LEASES", "WEBHOOK"}}, 8 * mib, true,
			"store stopped writing after the volume ran out (KV_LEASES; WEBHOOK): it is opened again once the volume has 8.0 MiB free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			short, reason := decide(tt.r, tt.reserve)
			if full := short != nothingShort; full != tt.full || !strings.Contains(reason, tt.mentions) {
				t.Errorf("decide: got %v %q, want %v mentioning %q", full, reason, tt.full, tt.mentions)
			}
		})
	}
}

func TestDefaultReserve(t *testing.T) {
	tests := []struct {
		r    Reading
		want uint64
	}{
		{Reading{VolumeSize: 64 * mib}, 8 * mib},                   // 5 % is less than the least
		{Reading{VolumeSize: 1000 * mib}, 50 * mib},                // 5 %
		{Reading{VolumeSize: 1 << 40}, 1 << 30},                    // at most 1 GiB
		{Reading{VolumeSize: 1 << 40, Limit: 400 * mib}, 20 * mib}, // the limit is the smaller room
		{Reading{Limit: 1000 * mib}, 50 * mib},                     // the limit alone
		{Reading{}, 8 * mib},
	}
	for _, tt := range tests {
		if got := DefaultReserve(tt.r); got != tt.want {
			t.Errorf("DefaultReserve(%+v): got %d, want %d", tt.r, got, tt.want)
		}
	}
}

// readings is a Read function whose answers the test sets.
type readings struct {
	mu  sync.Mutex
	r   Reading
	err error
}

func (f *readings) set(r Reading, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.r, f.err = r, err
}

func (f *readings) read(context.Context) (Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r, f.err
}

func TestGuardFollowsTheReadings(t *testing.T) {
	src := &readings{r: Reading{VolumeFree: 4 * mib, VolumeSize: 64 * mib}}
	var changes []bool
	g, err := New(t.Context(), Config{Read: src.read, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnChange: func(full bool, _ string) { changes = append(changes, full) }})
	if err != nil {
		t.Fatal(err)
	}
	if reason, full := g.Full(); !full || !strings.Contains(reason, "4.0 MiB free") {
		t.Fatalf("after the first reading of a full volume: got %v %q, want full", full, reason)
	}
	// A reading that fails leaves the decision as it was.
	src.set(Reading{}, errors.New("statfs: no such file"))
	g.check(t.Context())
	if _, full := g.Full(); !full {
		t.Error("a failed reading made room")
	}
	if st := g.Status(); st.Err == nil || st.Reserve != 8*mib {
		t.Errorf("status after a failed reading: got %+v, want its error and the reserve of 8 MiB", st)
	}
	src.set(Reading{VolumeFree: 20 * mib, VolumeSize: 64 * mib}, nil)
	g.check(t.Context())
	if reason, full := g.Full(); full || reason != "" {
		t.Errorf("after room was made: got %v %q, want not full", full, reason)
	}
	if want := []bool{true, false}; len(changes) != 2 || changes[0] != want[0] || changes[1] != want[1] {
		t.Errorf("changes: got %v, want %v", changes, want)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 8 * mib: "8.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d): got %q, want %q", n, got, want)
		}
	}
}

func TestVolume(t *testing.T) {
	free, size, err := Volume(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if size == 0 || free > size {
		t.Errorf("Volume: got %d free of %d, want a size and no more free than it", free, size)
	}
}

// TestGuardSaysWhenWhatIsShortChanges: a full store that goes on filling is one change; a change
// of what is short is another, for /readyz to name the right one.
func TestGuardSaysWhenWhatIsShortChanges(t *testing.T) {
	src := &readings{r: Reading{VolumeFree: 4 * mib, VolumeSize: 64 * mib}}
	var reasons []string
	g, err := New(t.Context(), Config{Read: src.read, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnChange: func(_ bool, reason string) { reasons = append(reasons, reason) }})
	if err != nil {
		t.Fatal(err)
	}
	src.set(Reading{VolumeFree: 3 * mib, VolumeSize: 64 * mib}, nil)
	g.check(t.Context())
	src.set(Reading{VolumeFree: 0, VolumeSize: 64 * mib, Broken: []string{"KV_LEASES"}}, nil)
	g.check(t.Context())
	if len(reasons) != 2 || !strings.Contains(reasons[0], "4.0 MiB free") || !strings.Contains(reasons[1], "KV_LEASES") {
		t.Errorf("changes heard: got %q, want the short volume, then the broken store", reasons)
	}
}

// TestGuardFreshReadings: with Fresh, a write is decided on a reading of its own when the last one
// is older, not on one up to a period old.
func TestGuardFreshReadings(t *testing.T) {
	src := &readings{r: Reading{VolumeFree: 40 * mib, VolumeSize: 64 * mib}}
	g, err := New(t.Context(), Config{Read: src.read, Fresh: time.Nanosecond, Every: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	src.set(Reading{VolumeFree: 1 * mib, VolumeSize: 64 * mib}, nil)
	if _, full := g.Full(); !full {
		t.Error("Full decided on a stale reading")
	}
}

// TestGuardMaintains: each periodic reading is handed to Maintain with the reserve.
func TestGuardMaintains(t *testing.T) {
	src := &readings{r: Reading{VolumeFree: 40 * mib, VolumeSize: 64 * mib}}
	got := make(chan uint64, 1)
	g, err := New(t.Context(), Config{Read: src.read, Every: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Maintain: func(_ context.Context, r Reading, reserve uint64) error {
			select {
			case got <- reserve:
			default:
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go g.Run(ctx)
	select {
	case reserve := <-got:
		if reserve != 8*mib {
			t.Errorf("Maintain: reserve %d, want %d", reserve, 8*mib)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Maintain not called")
	}
}
