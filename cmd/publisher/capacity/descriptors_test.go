package capacity

import "testing"

// maxFiles is the read API's most held files (readapi.DefaultFileDescriptors).
const maxFiles = 2048 + 256

func TestBudget(t *testing.T) {
	tests := []struct {
		name      string
		fdLimit   uint64
		total     int
		perClient int
		want      Budget
	}{
		{"a small limit", 1024, 0, 0, Budget{FDLimit: 1024, Reserve: 256, Files: 128, Admin: 96, Metrics: 48, API: 624, PerClient: DefaultConnsPerClient}},
		{"a common limit", 20000, 0, 0, Budget{FDLimit: 20000, Reserve: 4096, Files: 2048, Admin: 1024, Metrics: 64, API: 14816, PerClient: DefaultConnsPerClient}},
		{"a large limit: the reserve and the read API capped", 1 << 20, 0, 64, Budget{FDLimit: 1 << 20, Reserve: 4096, Files: 2048, Admin: 1024, Metrics: 64, API: maxAPIConns, PerClient: 64}},
		{"--max-connections sets the read API's", 1 << 20, 50000, 0, Budget{FDLimit: 1 << 20, Reserve: 4096, Files: 2048, Admin: 1024, Metrics: 64, API: 50000, PerClient: DefaultConnsPerClient}},
		{"--max-connections within the limit", 20000, 50000, 0, Budget{FDLimit: 20000, Reserve: 4096, Files: 2048, Admin: 1024, Metrics: 64, API: 14816, PerClient: DefaultConnsPerClient}},
		{"a tiny limit still serves", 300, 0, 0, Budget{FDLimit: 300, Reserve: 256, Files: 128, Admin: 5, Metrics: 2, API: 37, PerClient: DefaultConnsPerClient}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewBudget(tt.fdLimit, tt.total, tt.perClient, maxFiles)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if sum := got.Reserve + got.Admin + got.Metrics + got.API; sum > int(tt.fdLimit) {
				t.Errorf("shares add up to %d, past the limit %d", sum, tt.fdLimit)
			}
		})
	}
}
