package main

import "testing"

func TestConnBudget(t *testing.T) {
	tests := []struct {
		name      string
		fdLimit   uint64
		total     int
		perClient int
		want      connBudget
	}{
		{"a small limit", 1024, 0, 0, connBudget{fdLimit: 1024, reserve: 256, files: 128, admin: 96, metrics: 48, api: 624, perClient: DefaultConnsPerClient}},
		{"a common limit", 20000, 0, 0, connBudget{fdLimit: 20000, reserve: 4096, files: 2048, admin: 256, metrics: 64, api: 15584, perClient: DefaultConnsPerClient}},
		{"a large limit keeps at most 4,096", 1 << 20, 0, 64, connBudget{fdLimit: 1 << 20, reserve: 4096, files: 2048, admin: 256, metrics: 64, api: 1<<20 - 4096 - 320, perClient: 64}},
		{"--max-connections caps the read API", 20000, 5000, 0, connBudget{fdLimit: 20000, reserve: 4096, files: 2048, admin: 256, metrics: 64, api: 5000, perClient: DefaultConnsPerClient}},
		{"a tiny limit still serves", 300, 0, 0, connBudget{fdLimit: 300, reserve: 256, files: 128, admin: 5, metrics: 2, api: 37, perClient: DefaultConnsPerClient}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newConnBudget(tt.fdLimit, tt.total, tt.perClient)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if sum := got.reserve + got.admin + got.metrics + got.api; tt.total == 0 && tt.fdLimit >= 1024 && sum != int(tt.fdLimit) {
				t.Errorf("shares add up to %d, want the limit %d", sum, tt.fdLimit)
			}
		})
	}
}
